package preflight

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
)

// checkCase is one run of one check: the messages it must produce. A
// want* entry matches a message that contains it.
type checkCase struct {
	name      string
	check     Check
	wantName  string
	wantWarns []string
	wantErrs  []string
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantName != "" && tc.check.Name != tc.wantName {
				t.Errorf("name = %q, want %q", tc.check.Name, tc.wantName)
			}
			r := tc.check.Run(context.Background())
			matchMessages(t, "warnings", r.Warnings, tc.wantWarns)
			matchMessages(t, "errors", r.Errors, tc.wantErrs)
		})
	}
}

func matchMessages(t *testing.T, what string, got []error, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %q, want %d matching %q", what, messages(got), len(want), want)
		return
	}
	for i := range want {
		if !strings.Contains(got[i].Error(), want[i]) {
			t.Errorf("%s[%d] = %q, want it to contain %q", what, i, got[i], want[i])
		}
	}
}

func TestHostChecks(t *testing.T) {
	h := &fakeHost{
		files: map[string]string{
			"/etc/kubernetes/manifests/etcd.yaml":        "x",
			"/var/lib/etcd/member/snap":                  "x",
			"/proc/sys/net/ipv4/ip_forward":              "1\n",
			"/proc/sys/net/ipv6/conf/default/forwarding": "0\n",
		},
		dirs:      []string{"/var/lib/empty"},
		busyPorts: map[int]bool{6443: true},
		inPath:    map[string]bool{"mount": true},
		euid:      0,
		cpus:      2,
		memory:    2048 << 20,
		hosts:     map[string][]string{"node1": {"192.0.2.2"}},
	}
	small := &fakeHost{euid: 1000, cpus: 1, memory: 1024 << 20}
	runCases(t, []checkCase{
		{name: "root", check: IsPrivilegedUser(h), wantName: "IsPrivilegedUser"},
		{name: "not root", check: IsPrivilegedUser(small), wantErrs: []string{"root privileges, but runs with the effective user ID 1000"}},
		{name: "enough CPUs", check: NumCPU(h, 2), wantName: "NumCPU"},
		{name: "one CPU", check: NumCPU(small, 2), wantErrs: []string{"only 1 CPU(s) are available; a control-plane node needs at least 2"}},
		{name: "enough memory", check: Mem(h, 1700), wantName: "Mem"},
		{name: "little memory", check: Mem(small, 1700), wantErrs: []string{"1024 MB of RAM; a control-plane node needs at least 1700 MB"}},
		{name: "memory unknown", check: Mem(&fakeHost{memErr: errors.New("no sysinfo")}, 1700), wantErrs: []string{"no sysinfo"}},
		{name: "busy port", check: Port(h, 6443), wantName: "Port-6443", wantErrs: []string{"Port 6443 is in use"}},
		{name: "free port", check: Port(h, 10259), wantName: "Port-10259"},
		{name: "file in the way", check: FileAvailable(h, "/etc/kubernetes/manifests/etcd.yaml"),
			wantName: "FileAvailable--etc-kubernetes-manifests-etcd.yaml", wantErrs: []string{"/etc/kubernetes/manifests/etcd.yaml already exists"}},
		{name: "file free", check: FileAvailable(h, "/etc/kubernetes/manifests/kube-apiserver.yaml"),
			wantName: "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml"},
		{name: "file there", check: FileExisting(h, "/etc/kubernetes/manifests/etcd.yaml"), wantName: "FileExisting--etc-kubernetes-manifests-etcd.yaml"},
		{name: "file missing", check: FileExisting(h, "/etc/kubernetes/admin.conf"), wantErrs: []string{"/etc/kubernetes/admin.conf does not exist"}},
		{name: "folder not empty", check: DirAvailable(h, "/var/lib/etcd"), wantName: "DirAvailable--var-lib-etcd", wantErrs: []string{"/var/lib/etcd is not empty"}},
		{name: "folder empty", check: DirAvailable(h, "/var/lib/empty")},
		{name: "folder missing", check: DirAvailable(h, "/var/lib/nothing")},
		{name: "sysctl on", check: FileContent(h, "/proc/sys/net/ipv4/ip_forward", "1"), wantName: "FileContent--proc-sys-net-ipv4-ip_forward"},
		{name: "sysctl off", check: FileContent(h, "/proc/sys/net/ipv6/conf/default/forwarding", "1"),
			wantName: "FileContent--proc-sys-net-ipv6-conf-default-forwarding", wantErrs: []string{"/proc/sys/net/ipv6/conf/default/forwarding is not set to 1"}},
		{name: "sysctl missing", check: FileContent(small, "/proc/sys/net/ipv4/ip_forward", "1"), wantErrs: []string{"cannot read /proc/sys/net/ipv4/ip_forward"}},
		{name: "in path", check: InPath(h, "mount"), wantName: "FileExisting-mount"},
		{name: "not in path", check: InPath(h, "losetup"), wantName: "FileExisting-losetup", wantErrs: []string{"losetup was not found in the system path"}},
		{name: "name resolves", check: Hostname(h, "node1"), wantName: "Hostname"},
		{name: "name does not resolve", check: Hostname(h, "node2"),
			wantWarns: []string{`the node name "node2" cannot be reached`, `looking up the node name "node2": lookup node2: no such host`}},
	})
}

func TestSwap(t *testing.T) {
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	runCases(t, []checkCase{
		{name: "off", check: Swap(&fakeHost{files: map[string]string{"/proc/swaps": header}}), wantName: "Swap"},
		{name: "on", check: Swap(&fakeHost{files: map[string]string{"/proc/swaps": header + "/swapfile file 1048572 0 -2\n"}}),
			wantWarns: []string{"swap is on"}},
		{name: "no /proc/swaps", check: Swap(&fakeHost{})},
	})
}

func TestServiceChecks(t *testing.T) {
	withSystemd := func(cmds map[string]fakeCommand) *fakeHost {
		return &fakeHost{inPath: map[string]bool{"systemctl": true}, commands: cmds}
	}
	exit := errors.New("exit status 1")
	runCases(t, []checkCase{
		{name: "firewalld active", check: Firewalld(withSystemd(map[string]fakeCommand{"systemctl is-active firewalld": {out: "active\n"}}), []int{6443, 10250}),
			wantName: "Firewalld", wantWarns: []string{"firewalld is active; make sure the ports [6443 10250] are open"}},
		{name: "firewalld activating", check: Firewalld(withSystemd(map[string]fakeCommand{"systemctl is-active firewalld": {out: "activating\n"}}), []int{6443, 10250}),
			wantWarns: []string{"firewalld is active"}},
		{name: "firewalld inactive", check: Firewalld(withSystemd(map[string]fakeCommand{"systemctl is-active firewalld": {out: "inactive\n", err: exit}}), []int{6443})},
		{name: "firewalld unknown", check: Firewalld(withSystemd(nil), []int{6443})},
		{name: "firewalld without systemd", check: Firewalld(&fakeHost{}, []int{6443}), wantWarns: []string{"no supported init system"}},
		{name: "kubelet enabled", check: ServiceEnabled(withSystemd(map[string]fakeCommand{"systemctl is-enabled kubelet": {out: "enabled\n"}}), "kubelet"),
			wantName: "Service-kubelet"},
		{name: "kubelet disabled", check: ServiceEnabled(withSystemd(map[string]fakeCommand{"systemctl is-enabled kubelet": {out: "disabled\n", err: exit}}), "kubelet"),
			wantWarns: []string{"the kubelet service is not enabled; run 'systemctl enable kubelet.service'"}},
		{name: "kubelet without systemd", check: ServiceEnabled(&fakeHost{}, "kubelet"), wantWarns: []string{"no supported init system"}},
	})
}

func TestProxyChecks(t *testing.T) {
	proxied := &fakeHost{proxy: func(u *url.URL) (*url.URL, error) {
		if u.Hostname() == "10.96.0.1" || u.Hostname() == "192.0.2.2" || u.Hostname() == "fd00::2" {
			return nil, nil // in NO_PROXY
		}
		return url.Parse("http://proxy:3128")
	}}
	var asked []string
	recorder := &fakeHost{proxy: func(u *url.URL) (*url.URL, error) { asked = append(asked, u.String()); return nil, nil }}
	runCases(t, []checkCase{
		{name: "direct", check: HTTPProxy(&fakeHost{}, netip.MustParseAddr("192.0.2.2")), wantName: "HTTPProxy"},
		{name: "address excluded", check: HTTPProxy(proxied, netip.MustParseAddr("192.0.2.2"))},
		{name: "address proxied", check: HTTPProxy(proxied, netip.MustParseAddr("192.0.2.3")),
			wantWarns: []string{`connections to "https://192.0.2.3" would go through the proxy "http://proxy:3128"`}},
		{name: "IPv6 address proxied", check: HTTPProxy(proxied, netip.MustParseAddr("fd00::3")), wantWarns: []string{`"https://[fd00::3]"`}},
		{name: "service range excluded", check: HTTPProxyCIDR(proxied, netip.MustParsePrefix("10.96.0.0/12")), wantName: "HTTPProxyCIDR"},
		{name: "pod range proxied", check: HTTPProxyCIDR(proxied, netip.MustParsePrefix("10.244.0.0/16")),
			wantWarns: []string{`connections to "10.244.0.0/16" would go through the proxy "http://proxy:3128"`}},
		{name: "range without a first address", check: HTTPProxyCIDR(proxied, netip.MustParsePrefix("10.0.0.1/32")), wantErrs: []string{"10.0.0.1/32"}},
		{name: "asks for the first address", check: HTTPProxyCIDR(recorder, netip.MustParsePrefix("fd01::/108"))},
	})
	if want := []string{"https://[fd01::1]"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("asked the proxy about %v, want %v", asked, want)
	}
}

func TestForwardingChecks(t *testing.T) {
	tests := []struct {
		address        string
		service, pod   string
		wantCheckNames []string
	}{
		{"192.0.2.2", "10.96.0.0/12", "", []string{"FileContent--proc-sys-net-ipv4-ip_forward"}},
		{"fd00::2", "fd01::/108", "fd02::/56", []string{"FileContent--proc-sys-net-ipv6-conf-default-forwarding"}},
		{"192.0.2.2", "10.96.0.0/12,fd01::/108", "", []string{"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-ipv6-conf-default-forwarding"}},
		{"fd00::2", "10.96.0.0/12", "", []string{"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-ipv6-conf-default-forwarding"}},
		{"fd00::2", "fd01::/108", "10.244.0.0/16", []string{"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-ipv6-conf-default-forwarding"}},
	}
	for _, tt := range tests {
		var names []string
		addrs := []netip.Addr{netip.MustParseAddr(tt.address)}
		for _, list := range []string{tt.service, tt.pod} {
			if list == "" {
				continue
			}
			subnets, err := config.ParseSubnets(list)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range subnets {
				addrs = append(addrs, p.Addr())
			}
		}
		for _, c := range ForwardingChecks(&fakeHost{}, addrs...) {
			names = append(names, c.Name)
		}
		if !reflect.DeepEqual(names, tt.wantCheckNames) {
			t.Errorf("ForwardingChecks(%s, %s, %s) = %v, want %v", tt.address, tt.service, tt.pod, names, tt.wantCheckNames)
		}
	}
}

func TestVersionChecks(t *testing.T) {
	kubelet := func(out string) *fakeHost {
		return &fakeHost{commands: map[string]fakeCommand{"kubelet --version": {out: out}}}
	}
	runCases(t, []checkCase{
		{name: "same release", check: KubernetesVersion("v1.37.3"), wantName: "KubernetesVersion"},
		{name: "newer patch", check: KubernetesVersion("v1.37.9")},
		{name: "older minor", check: KubernetesVersion("v1.36.0")},
		{name: "newer minor", check: KubernetesVersion("v1.38.0"),
			wantWarns: []string{"the control plane version 1.38.0 is newer than this kubeadm (1.37.x)"}},
		{name: "newer pre-release", check: KubernetesVersion("v1.38.0-alpha.1"), wantWarns: []string{"1.38.0-alpha.1"}},
		{name: "kubelet same", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.37.3\n")), "v1.37.3"), wantName: "KubeletVersion"},
		{name: "kubelet newer patch", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.37.5\n")), "v1.37.3")},
		{name: "kubelet three minors behind", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.34.0\n")), "v1.37.3")},
		{name: "kubelet too old", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.33.9\n")), "v1.37.3"),
			wantErrs: []string{`the kubelet version "1.33.9" is older than this kubeadm supports (1.34 or newer)`}},
		{name: "kubelet newer than control plane", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.37.0\n")), "v1.36.0"),
			wantErrs: []string{`the kubelet ("1.37.0") is of a newer minor release than the control plane ("1.36.0")`}},
		{name: "kubelet pre-release of the next minor", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes v1.38.0-alpha.0\n")), "v1.37.3"),
			wantErrs: []string{"newer minor release"}},
		{name: "kubelet garbage", check: KubeletVersion(InstalledKubelet(kubelet("Kubernetes garbage\n")), "v1.37.3"),
			wantErrs: []string{`cannot determine the kubelet version: 'kubelet --version' printed "Kubernetes garbage"`}},
		{name: "no kubelet", check: KubeletVersion(InstalledKubelet(&fakeHost{}), "v1.37.3"),
			wantErrs: []string{"cannot determine the kubelet version: running 'kubelet --version'"}},
	})
}

func TestInitChecksNamesAndOrder(t *testing.T) {
	local := &kubeadm.InitConfiguration{}
	local.KubernetesVersion = "v1.36.3"
	local.LocalAPIEndpoint = kubeadm.APIEndpoint{AdvertiseAddress: "192.0.2.2", BindPort: 6443}
	local.NodeRegistration.Name = "node1"
	local.NodeRegistration.CRISocket = "unix:///var/run/containerd/containerd.sock"
	local.Networking.ServiceSubnet = "10.96.0.0/12"
	local.Etcd.Local = &kubeadm.LocalEtcd{DataDir: "/var/lib/etcd"}

	external := *local
	external.LocalAPIEndpoint.BindPort = 8443
	external.Networking.ServiceSubnet = "10.96.0.0/12,fd01::/108"
	external.Networking.PodSubnet = "10.244.0.0/16"
	external.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{
		Endpoints: []string{"https://10.0.0.5:2379"},
		CAFile:    "/etc/etcd/ca.crt", CertFile: "/etc/etcd/client.crt", KeyFile: "/etc/etcd/client.key",
	}}
	configtest.Parse(local)
	configtest.Parse(&external)

	common := func(port string, cidrs int) []string {
		names := []string{"NumCPU", "Mem", "KubernetesVersion", "Firewalld", "Port-" + port, "Port-10259", "Port-10257",
			"FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
			"FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
			"FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
			"FileAvailable--etc-kubernetes-manifests-etcd.yaml",
			"HTTPProxy"}
		for range cidrs {
			names = append(names, "HTTPProxyCIDR")
		}
		return append(names, "CRI", "ContainerRuntimeVersion", "Swap",
			"FileExisting-losetup", "FileExisting-mount", "FileExisting-cp",
			"SystemVerification", "Hostname", "KubeletVersion", "Service-kubelet", "Port-10250")
	}
	tests := []struct {
		name string
		cfg  *kubeadm.InitConfiguration
		want []string
	}{
		{"local etcd", local, append(common("6443", 1),
			"FileContent--proc-sys-net-ipv4-ip_forward", "Port-2379", "Port-2380", "DirAvailable--var-lib-etcd")},
		{"external etcd, dual stack", &external, append(common("8443", 3),
			"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-ipv6-conf-default-forwarding",
			"ExternalEtcdVersion", "ExternalEtcdClientCertificates", "ExternalEtcdClientCertificates", "ExternalEtcdClientCertificates")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range InitChecks(&fakeHost{}, tt.cfg, "/etc/kubernetes/manifests") {
				got = append(got, c.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("InitChecks names:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestInstalledKubeletAsksOnce(t *testing.T) {
	h := &fakeHost{commands: map[string]fakeCommand{"kubelet --version": {out: "Kubernetes v1.36.3\n"}}}
	kv := InstalledKubelet(h)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := kv(context.Background()); err != nil || v.String() != "1.36.3" {
				t.Errorf("version = %v, %v", v, err)
			}
		}()
	}
	wg.Wait()
	if h.commandN != 1 {
		t.Errorf("kubelet --version ran %d times, want 1", h.commandN)
	}
}

// TestJoinAddress: the forwarding checks of a join look at the discovery
// endpoint's address when it is one, else at the node's parsed advertise
// address, else take IPv4.
func TestJoinAddress(t *testing.T) {
	withEndpoint := func(ep string) *kubeadm.JoinConfiguration {
		return &kubeadm.JoinConfiguration{Discovery: kubeadm.Discovery{BootstrapToken: &kubeadm.BootstrapTokenDiscovery{APIServerEndpoint: ep}}}
	}
	controlPlane := withEndpoint("lb.example.com:6443")
	controlPlane.AdvertiseIP = netip.MustParseAddr("fd00::5")
	for _, tt := range []struct {
		cfg  *kubeadm.JoinConfiguration
		want string
	}{
		{withEndpoint("[fd00::1]:6443"), "fd00::1"},
		{withEndpoint("192.0.2.1:6443"), "192.0.2.1"},
		{controlPlane, "fd00::5"},
		{withEndpoint("lb.example.com:6443"), "0.0.0.0"},
		{&kubeadm.JoinConfiguration{}, "0.0.0.0"},
	} {
		if got := joinAddress(tt.cfg); got.String() != tt.want {
			t.Errorf("joinAddress(%+v) = %s, want %s", tt.cfg.Discovery.BootstrapToken, got, tt.want)
		}
	}
}
