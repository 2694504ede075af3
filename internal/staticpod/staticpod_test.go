package staticpod

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/patches"
)

// Expectations marked "upstream" were observed by running upstream kubeadm
// v1.36.3 as a black box.

func TestArgsCommand(t *testing.T) {
	defaults := map[string]string{"b": "2", "a": "1", "c": "3"}
	tests := []struct {
		name  string
		extra []kubeadm.Arg
		want  string
	}{
		{"defaults sorted", nil, "bin --a=1 --b=2 --c=3"},
		{"new flags appended in order", []kubeadm.Arg{{Name: "z", Value: "9"}, {Name: "d", Value: "4"}}, "bin --a=1 --b=2 --c=3 --z=9 --d=4"},
		{"override drops the default and goes last", []kubeadm.Arg{{Name: "a", Value: "x"}}, "bin --b=2 --c=3 --a=x"},
		{"repeats kept", []kubeadm.Arg{{Name: "t", Value: "A"}, {Name: "b", Value: "B"}, {Name: "t", Value: "C"}, {Name: "b", Value: "D"}},
			"bin --a=1 --c=3 --t=A --b=B --t=C --b=D"},
		{"empty value", []kubeadm.Arg{{Name: "c", Value: ""}}, "bin --a=1 --b=2 --c="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(args{defaults: defaults, extra: tt.extra}.command("bin"), " ")
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEtcdMetricsTarget(t *testing.T) {
	tests := []struct {
		urls string
		want probeTarget
	}{
		{"http://127.0.0.1:2381", probeTarget{"127.0.0.1", 2381, corev1.URISchemeHTTP}},
		{"http://10.2.2.2:3333", probeTarget{"10.2.2.2", 3333, corev1.URISchemeHTTP}},
		{"https://[::1]:3333,http://10.0.0.1:4444", probeTarget{"::1", 3333, corev1.URISchemeHTTPS}},
		{"http://0.0.0.0:2381", probeTarget{"0.0.0.0", 2381, corev1.URISchemeHTTP}},
		{"http://[::]:2381", probeTarget{"::", 2381, corev1.URISchemeHTTP}},
		{"http://localhost", probeTarget{"localhost", 2381, corev1.URISchemeHTTP}},
		{"https://:2555", probeTarget{"127.0.0.1", 2555, corev1.URISchemeHTTPS}},
		{"HTTPS://x:1", probeTarget{"x", 1, corev1.URISchemeHTTPS}},
		{"unix://foo:12", probeTarget{"foo", 12, corev1.URISchemeHTTP}},
		{"garbage", probeTarget{"127.0.0.1", 2381, corev1.URISchemeHTTP}},
		{"http://localhost:abc", probeTarget{"127.0.0.1", 2381, corev1.URISchemeHTTP}},
		{"http://a:1 ,http://b:2", probeTarget{"127.0.0.1", 2381, corev1.URISchemeHTTP}},
	}
	for _, tt := range tests {
		if got := etcdMetricsTarget(tt.urls, "127.0.0.1"); got != tt.want {
			t.Errorf("%q: got %+v, want %+v", tt.urls, got, tt.want)
		}
	}
}

func TestBindAddressHost(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "0.0.0.0": "", "::": "", "": "",
		"::1": "::1", "0:0::0": "0:0::0", "localhost": "localhost", "10.1.1.1": "10.1.1.1",
	} {
		if got := bindAddressHost(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestStartupFailureThreshold(t *testing.T) {
	for in, want := range map[time.Duration]int32{
		4 * time.Minute: 24, 8*time.Minute + 5*time.Second: 49, 8*time.Minute + time.Second: 49,
		5 * time.Second: 1, 10 * time.Second: 1, time.Millisecond: 1, 0: 0, time.Hour: 360,
	} {
		if got := startupFailureThreshold(in); got != want {
			t.Errorf("%v: got %d, want %d", in, got, want)
		}
	}
}

func TestExternalEtcdVolumes(t *testing.T) {
	tests := []struct {
		ca, cert, key string
		want          []string // host paths of etcd-certs-0, -1, ...
	}{
		{"/etc/etcd/ca.pem", "/etc/etcd/client.pem", "/etc/etcd/client-key.pem", []string{"/etc/etcd"}},
		{"/a/ca.pem", "/b/c.pem", "/c/k.pem", []string{"/a", "/b", "/c"}},
		{"/etc/kubernetes/pki/etcd/ca.crt", "/etc/ssl/certs/c.pem", "/etc/pki/k.pem", []string{"/etc/pki"}},
		{"/x/ca.pem", "/y/c.pem", "/x/k.pem", []string{"/x", "/y"}},
		{"/etc/kubernetes/pki/sub/ca.pem", "/etc/kubernetes/c.pem", "/k.pem", []string{"/"}},
		{"/etc/ssl/certs/sub/ca", "/etc/ssl/c", "/etc/ca-certificates/k", []string{"/etc/ssl"}},
		{"/etc/kubernetesfoo/ca", "/etc/kubernetes/other/c", "/etc/ssl/certsX/k", []string{"/etc/kubernetes/other", "/etc/kubernetesfoo"}},
		{"/usr/share/ca-certificates/x/ca", "/etc/pki/tls/c", "/usr/local/share/ca-certificates/k", []string{"/etc/pki/tls"}},
		{"/a/b/ca", "/a/c", "/z/k", []string{"/a", "/z"}},
		{"/ab/ca", "/a/c", "/a/b/k", []string{"/a"}},
		{"/etc/kubernetes/c.pem", "/q/ca", "/r/k", []string{"/etc/kubernetes", "/q", "/r"}},
		{"/etc/ca-certificates/c.pem", "/etc/pki/ca-trust/x/c", "/etc/pki/tls/certsfoo/k", nil},
		{"/etc/kubernetes/pkifoo/ca", "/etc/kubernetes/pki/c", "/etc/kubernetes/pki/k", nil},
		{"/q/ca.pem", "", "", []string{"/q"}},
		{"", "", "", nil},
	}
	for _, tt := range tests {
		vs := volumeSet{}
		vs.addExternalEtcdCerts("/etc/kubernetes/pki", &kubeadm.ExternalEtcd{CAFile: tt.ca, CertFile: tt.cert, KeyFile: tt.key})
		var got []string
		for i := range len(vs) {
			m, ok := vs[fmt.Sprintf("etcd-certs-%d", i)]
			if !ok {
				t.Fatalf("%v: volumes %v are not numbered from 0", tt, vs)
			}
			got = append(got, m.volume.HostPath.Path)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s %s: got %v, want %v", tt.ca, tt.cert, tt.key, got, tt.want)
		}
	}
}

func TestContainerEnv(t *testing.T) {
	environ := []string{"HTTP_PROXY=http://p", "no_proxy=", "x_Proxy=xp", "HTTP_PROXY_X=z", "proxy=p", "MY_PROXY=m", "PATH=/bin", "BROKEN"}
	extra := []kubeadm.EnvVar{
		{EnvVar: corev1.EnvVar{Name: "MY_PROXY", Value: "config"}},
		{EnvVar: corev1.EnvVar{Name: "Z", Value: "1"}},
		{EnvVar: corev1.EnvVar{Name: "Z", Value: "2"}},
		{EnvVar: corev1.EnvVar{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
	}
	got := containerEnv(environ, true, extra)
	var names []string
	for _, e := range got {
		names = append(names, e.Name+"="+e.Value)
	}
	if want := "HTTP_PROXY=http://p IP= MY_PROXY=config Z=2 x_Proxy=xp"; strings.Join(names, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(names, " "), want)
	}
	if got[1].ValueFrom.FieldRef.APIVersion != "v1" {
		t.Errorf("field reference not defaulted: %+v", got[1].ValueFrom.FieldRef)
	}
	if extra[3].ValueFrom.FieldRef.APIVersion != "" {
		t.Error("the configuration was modified")
	}
	if got := containerEnv(environ, false, nil); got != nil {
		t.Errorf("without proxies: got %v", got)
	}
}

// testCluster returns a defaulted configuration without reading files.
func testCluster() (*kubeadm.ClusterConfiguration, Node) {
	c := &kubeadm.ClusterConfiguration{
		KubernetesVersion: "v1.36.3",
		ImageRepository:   "registry.k8s.io",
		CertificatesDir:   "/etc/kubernetes/pki",
		ClusterName:       "kubernetes",
		Networking:        kubeadm.Networking{ServiceSubnet: "10.96.0.0/12", DNSDomain: "cluster.local"},
		Etcd:              kubeadm.Etcd{Local: &kubeadm.LocalEtcd{DataDir: "/var/lib/etcd"}},
	}
	return c, Node{Name: "n", AdvertiseAddress: netip.MustParseAddr("10.0.0.5"), BindPort: 6443, HealthCheckTimeout: 4 * time.Minute}
}

func flagsOf(p *corev1.Pod) string { return strings.Join(p.Spec.Containers[0].Command, " ") }

func TestExternalCA(t *testing.T) {
	c, n := testCluster()
	pod, err := ControllerManagerPod(c, n, Options{ExternalCA: true})
	if err != nil {
		t.Fatal(err)
	}
	if f := flagsOf(pod); !strings.Contains(f, "--cluster-signing-cert-file= ") || !strings.Contains(f, "--cluster-signing-key-file= ") {
		t.Errorf("upstream empties the signing flags with an external CA: %s", f)
	}
}

func TestAPIServerEtcdServers(t *testing.T) {
	c, n := testCluster()
	for _, tt := range []struct {
		extra []kubeadm.Arg
		want  string
	}{
		{nil, "--etcd-servers=https://127.0.0.1:2379"},
		{[]kubeadm.Arg{{Name: "advertise-client-urls", Value: "https://1.1.1.1:2379"}, {Name: "advertise-client-urls", Value: "https://2.2.2.2:2379"}}, "--etcd-servers=https://2.2.2.2:2379"},
		{[]kubeadm.Arg{{Name: "advertise-client-urls", Value: ""}}, "--etcd-servers= "},
	} {
		c.Etcd.Local.ExtraArgs = tt.extra
		pod, err := APIServerPod(c, n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if f := flagsOf(pod) + " "; !strings.Contains(f, tt.want) {
			t.Errorf("%v: flags %s lack %q", tt.extra, f, tt.want)
		}
	}
}

func TestAuthorizationModeWarning(t *testing.T) {
	c, n := testCluster()
	var warnings []string
	o := Options{Warn: func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }}
	if _, err := APIServerPod(c, n, o); err != nil {
		t.Fatal(err)
	}
	c.APIServer.ExtraArgs = []kubeadm.Arg{{Name: "authorization-mode", Value: "Node,RBAC"}}
	if _, err := APIServerPod(c, n, o); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("unexpected warnings %q", warnings)
	}
	c.APIServer.ExtraArgs = []kubeadm.Arg{{Name: "authorization-mode", Value: "AlwaysAllow"}}
	if _, err := APIServerPod(c, n, o); err != nil {
		t.Fatal(err)
	}
	want := `the default kube-apiserver authorization-mode is "Node,RBAC"; using "AlwaysAllow"`
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

func TestBuildErrors(t *testing.T) {
	c, n := testCluster()
	if _, err := Build("kube-proxy", c, n, Options{}); err == nil {
		t.Error("unknown component accepted")
	}
	bad := n
	bad.AdvertiseAddress = netip.Addr{}
	for _, comp := range []string{Etcd, KubeAPIServer} {
		if _, err := Build(comp, c, bad, Options{}); err == nil {
			t.Errorf("%s: bad advertise address accepted", comp)
		}
	}
	c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://e:2379"}}}
	if _, err := EtcdPod(c, n, Options{}); err == nil {
		t.Error("etcd manifest built for an external etcd")
	}
}

func patchSet(t *testing.T, files map[string]string) *patches.Set {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := patches.Load(dir, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestPatch(t *testing.T) {
	c, n := testCluster()
	pod, err := SchedulerPod(c, n, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no patches gives the same Pod", func(t *testing.T) {
		got, err := Patch(KubeScheduler, pod, patchSet(t, map[string]string{"etcd.yaml": "a: b"}), &bytes.Buffer{})
		if err != nil || got != pod {
			t.Errorf("got %p, %v; want %p", got, err, pod)
		}
		got, err = Patch(KubeScheduler, pod, nil, &bytes.Buffer{})
		if err != nil || got != pod {
			t.Errorf("nil set: got %p, %v; want %p", got, err, pod)
		}
	})
	t.Run("patched, unknown fields dropped", func(t *testing.T) {
		set := patchSet(t, map[string]string{
			"kube-scheduler.yaml":        "spec: {foo: bar, containers: [{name: kube-scheduler, image: x, foo: bar}]}",
			"kube-scheduler1+merge.yaml": "{metadata: {creationTimestamp: \"2020-01-01T00:00:00Z\"}, status: {phase: Running}}",
		})
		var out bytes.Buffer
		got, err := Patch(KubeScheduler, pod, set, &out)
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Containers[0].Image != "x" || got.Status.Phase != corev1.PodRunning || got.CreationTimestamp.IsZero() {
			t.Errorf("patch not applied: %+v", got)
		}
		if pod.Spec.Containers[0].Image == "x" {
			t.Error("the input Pod was modified")
		}
		data, err := Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("foo")) {
			t.Errorf("unknown field kept:\n%s", data)
		}
		if n := strings.Count(out.String(), "[patches] Applied patch"); n != 2 {
			t.Errorf("%d patches reported:\n%s", n, out.String())
		}
	})
	for name, files := range map[string]map[string]string{
		"kind changed":  {"kube-scheduler+json.yaml": "[{op: replace, path: /kind, value: Deployment}]"},
		"wrong type":    {"kube-scheduler.yaml": "spec: {containers: 5}"},
		"label not str": {"kube-scheduler.yaml": "metadata: {labels: {sub: y}}"},
		"failing patch": {"kube-scheduler+json.yaml": "[{op: remove, path: /nonexistent}]"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Patch(KubeScheduler, pod, patchSet(t, files), &bytes.Buffer{}); err == nil {
				t.Error("no error")
			}
		})
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestWriteManifest(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "kubernetes", "manifests")
	path := ManifestPath(dir, KubeScheduler)

	written, err := WriteManifest(dir, KubeScheduler, []byte("one\n"))
	if err != nil || !written {
		t.Fatalf("first write: %v, %v", written, err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("folder mode %o, want 700", m)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode %o, want 600", m)
	}
	ino := inode(t, path)

	// Same content: not rewritten, so the kubelet sees no change.
	written, err = WriteManifest(dir, KubeScheduler, []byte("one\n"))
	if err != nil || written {
		t.Fatalf("second write: %v, %v", written, err)
	}
	if inode(t, path) != ino {
		t.Error("an identical manifest was rewritten")
	}

	// Same content, wrong mode: only the mode is corrected.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if written, err = WriteManifest(dir, KubeScheduler, []byte("one\n")); err != nil || written {
		t.Fatalf("mode fix: %v, %v", written, err)
	}
	if m := mode(t, path); m != 0o600 || inode(t, path) != ino {
		t.Errorf("mode %o (want 600), rewritten %v", m, inode(t, path) != ino)
	}

	// New content replaces the file.
	if written, err = WriteManifest(dir, KubeScheduler, []byte("two\n")); err != nil || !written {
		t.Fatalf("change: %v, %v", written, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two\n" {
		t.Errorf("content %q", b)
	}

	// An existing folder keeps its mode, as upstream leaves it.
	other := filepath.Join(root, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteManifest(other, Etcd, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, other); m != 0o755 {
		t.Errorf("existing folder mode changed to %o", m)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("leftover files in %s: %v", dir, entries)
	}
}

func TestCompare(t *testing.T) {
	base := "spec:\n  containers:\n  - command:\n    - bin\n    - --a=1\n    - --b=2\n    image: x\n"
	tests := []struct {
		name, got string
		want      []string
		orderOnly bool
	}{
		{"same", base, nil, true},
		{"reformatted", "spec: {containers: [{image: x, command: [bin, --a=1, --b=2]}]}", nil, true},
		{"order", strings.Replace(base, "--a=1\n    - --b=2", "--b=2\n    - --a=1", 1),
			[]string{".spec.containers[0].command: same flags, different order (order only)"}, true},
		{"flag value", strings.Replace(base, "--a=1", "--a=3", 1),
			[]string{`.spec.containers[0].command: missing flag "--a=1" (x1)`, `.spec.containers[0].command: unexpected flag "--a=3" (x1)`}, false},
		{"binary", strings.Replace(base, "- bin", "- other", 1), []string{`.spec.containers[0].command[0]: want "bin", got "other"`}, false},
		{"field", strings.Replace(base, "image: x", "image: z", 1), []string{`.spec.containers[0].image: want "x", got "z"`}, false},
		{"extra field", base + "status: {}\n", []string{".status: unexpected {}"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffs, err := Compare([]byte(base), []byte(tt.got))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(diffs, tt.want) {
				t.Errorf("got %q, want %q", diffs, tt.want)
			}
			if OrderOnly(diffs) != tt.orderOnly {
				t.Errorf("OrderOnly = %v", !tt.orderOnly)
			}
		})
	}
}
