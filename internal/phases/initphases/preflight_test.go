package initphases

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
)

// pfHost is a healthy cgroup v2 machine with containerd, unless a test
// changes it.
type pfHost struct {
	euid      int
	files     fstest.MapFS
	busyPorts map[int]bool
	noRuntime bool

	mu    sync.Mutex
	dials int
	pulls []string
}

func newPFHost() *pfHost {
	return &pfHost{files: fstest.MapFS{
		"proc/config.gz":                         {Data: []byte{}}, // unreadable gzip: falls through to /boot
		"boot/config-6.8.0":                      {Data: []byte(pfKernelConfig)},
		"proc/mounts":                            {Data: []byte("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")},
		"proc/self/cgroup":                       {Data: []byte("0::/init.scope\n")},
		"sys/fs/cgroup/init.scope/cgroup.freeze": {Data: []byte("0\n")},
		"sys/fs/cgroup/cgroup.controllers":       {Data: []byte("cpuset cpu io memory hugetlb pids\n")},
		"proc/sys/net/ipv4/ip_forward":           {Data: []byte("1\n")},
		"proc/swaps":                             {Data: []byte("Filename Type Size Used Priority\n")},
	}}
}

const pfKernelConfig = `CONFIG_NAMESPACES=y
CONFIG_NET_NS=y
CONFIG_PID_NS=y
CONFIG_IPC_NS=y
CONFIG_UTS_NS=y
CONFIG_CPUSETS=y
CONFIG_MEMCG=y
CONFIG_INET=y
CONFIG_EXT4_FS=y
CONFIG_PROC_FS=y
CONFIG_NETFILTER_XT_TARGET_REDIRECT=m
CONFIG_NETFILTER_XT_MATCH_COMMENT=m
CONFIG_FAIR_GROUP_SCHED=y
CONFIG_CGROUPS=y
CONFIG_CGROUP_BPF=y
CONFIG_CGROUP_PIDS=y
CONFIG_CGROUP_SCHED=y
CONFIG_SECCOMP=y
`

func rel(p string) string { return strings.TrimPrefix(p, "/") }

func (h *pfHost) ReadFile(p string) ([]byte, error)       { return fs.ReadFile(h.files, rel(p)) }
func (h *pfHost) Stat(p string) (fs.FileInfo, error)      { return fs.Stat(h.files, rel(p)) }
func (h *pfHost) ReadDir(p string) ([]fs.DirEntry, error) { return fs.ReadDir(h.files, rel(p)) }
func (h *pfHost) ListenTCP(port int) error {
	if h.busyPorts[port] {
		return errors.New("address already in use")
	}
	return nil
}
func (h *pfHost) LookPath(file string) (string, error) { return "/usr/bin/" + file, nil }
func (h *pfHost) Command(_ context.Context, name string, args ...string) ([]byte, error) {
	switch strings.Join(append([]string{name}, args...), " ") {
	case "kubelet --version":
		return []byte("Kubernetes v1.36.3\n"), nil
	case "systemctl is-active firewalld":
		return []byte("inactive\n"), errors.New("exit status 3")
	case "systemctl is-enabled kubelet":
		return []byte("enabled\n"), nil
	}
	return nil, fmt.Errorf("unexpected command %s %v", name, args)
}
func (h *pfHost) EffectiveUID() int                { return h.euid }
func (h *pfHost) NumCPU() int                      { return 4 }
func (h *pfHost) TotalMemory() (uint64, error)     { return 8 << 30, nil }
func (h *pfHost) KernelRelease() (string, error)   { return "6.8.0", nil }
func (h *pfHost) Proxy(*url.URL) (*url.URL, error) { return nil, nil }
func (h *pfHost) LookupHost(context.Context, string) ([]string, error) {
	return []string{"10.0.0.5"}, nil
}
func (h *pfHost) HTTPGet(context.Context, string, *tls.Config) ([]byte, error) {
	return nil, errors.New("no etcd here")
}
func (h *pfHost) DialCRI(context.Context, string) (preflight.Runtime, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dials++
	if h.noRuntime {
		return nil, errors.New("dial unix /run/containerd/containerd.sock: connect: no such file or directory")
	}
	return pfRuntime{h}, nil
}

type pfRuntime struct{ h *pfHost }

func (r pfRuntime) Status(context.Context, bool) (*preflight.RuntimeStatus, error) {
	return &preflight.RuntimeStatus{Conditions: []preflight.RuntimeCondition{{Type: "RuntimeReady", Status: true}}}, nil
}
func (r pfRuntime) RuntimeConfig(context.Context) error                { return nil }
func (r pfRuntime) ImagePresent(context.Context, string) (bool, error) { return false, nil }
func (r pfRuntime) PullImage(_ context.Context, image string) error {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	r.h.pulls = append(r.h.pulls, image)
	return nil
}
func (r pfRuntime) Close() error { return nil }

const preflightTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

func preflightData(t *testing.T) (*Data, *bytes.Buffer) {
	t.Helper()
	cfg := configtest.InitConfiguration(t, preflightTestConfig, "10.0.0.5")
	out := &bytes.Buffer{}
	return &Data{Cfg: cfg, ManifestDir: ManifestsDir, Out: out, Now: time.Now}, out
}

func TestPreflightPhase(t *testing.T) {
	const pullNote = "[preflight] Pulling the images a Kubernetes control plane needs\n"
	tests := []struct {
		name      string
		setup     func(*pfHost, *Data)
		wantErr   []string // fragments of the error; nil for success
		wantOut   []string // fragments of the output
		notOut    []string
		wantPulls int
		wantDials int
	}{
		{
			name:      "healthy machine",
			wantOut:   []string{"[preflight] Running pre-flight checks\n", pullNote},
			wantPulls: 7,
			wantDials: 3,
		},
		{
			name:    "not root: nothing else runs",
			setup:   func(h *pfHost, _ *Data) { h.euid = 1000; h.busyPorts = map[int]bool{6443: true} },
			wantErr: []string{"[preflight] Some fatal errors occurred:\n\t[ERROR IsPrivilegedUser]: ", "--ignore-preflight-errors="},
			notOut:  []string{pullNote},
		},
		{
			name: "every failure at once, no pull",
			setup: func(h *pfHost, _ *Data) {
				h.busyPorts = map[int]bool{6443: true, 2379: true}
				h.files["etc/kubernetes/manifests/kube-apiserver.yaml"] = &fstest.MapFile{}
			},
			wantErr: []string{
				"\t[ERROR Port-6443]: Port 6443 is in use\n",
				"\t[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: /etc/kubernetes/manifests/kube-apiserver.yaml already exists\n",
				"\t[ERROR Port-2379]: Port 2379 is in use\n",
			},
			notOut:    []string{pullNote},
			wantDials: 2,
		},
		{
			name: "ignored errors warn",
			setup: func(h *pfHost, d *Data) {
				h.busyPorts = map[int]bool{6443: true}
				d.IgnorePreflightErrors = sets.New("port-6443")
			},
			wantOut:   []string{"\t[WARNING Port-6443]: Port 6443 is in use\n", pullNote},
			wantPulls: 7,
			wantDials: 3,
		},
		{
			name: "no runtime fails the pull too when ignored",
			setup: func(h *pfHost, d *Data) {
				h.noRuntime = true
				d.IgnorePreflightErrors = sets.New("CRI", "ContainerRuntimeVersion")
			},
			wantErr:   []string{"\t[ERROR ImagePull]: could not connect to the container runtime"},
			wantOut:   []string{"\t[WARNING CRI]: could not connect", pullNote},
			wantDials: 3,
		},
		{
			name: "dry run checks the real manifest folder and pulls nothing",
			setup: func(h *pfHost, d *Data) {
				d.DryRun = true
				d.ManifestDir = "/tmp/kubeadm-init-dryrun/manifests"
				h.files["etc/kubernetes/manifests/etcd.yaml"] = &fstest.MapFile{}
				d.IgnorePreflightErrors = sets.New("all")
			},
			wantOut: []string{
				"\t[WARNING FileAvailable--etc-kubernetes-manifests-etcd.yaml]: /etc/kubernetes/manifests/etcd.yaml already exists\n",
				"[preflight] Would pull the required images",
			},
			notOut:    []string{pullNote},
			wantDials: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPFHost()
			d, out := preflightData(t)
			if tt.setup != nil {
				tt.setup(h, d)
			}
			phase := preflightPhase(func() preflight.Host { return h })
			err := phase.Run(context.Background(), d)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Run() = %v\noutput:\n%s", err, out)
				}
			} else {
				if err == nil {
					t.Fatalf("Run() succeeded, want an error\noutput:\n%s", out)
				}
				if code := exitcode.Of(err); code != exitcode.Preflight {
					t.Errorf("exit code %d, want %d", code, exitcode.Preflight)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%s", w, err)
					}
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if len(h.pulls) != tt.wantPulls {
				t.Errorf("%d images pulled, want %d: %v", len(h.pulls), tt.wantPulls, h.pulls)
			}
			if h.dials != tt.wantDials {
				t.Errorf("%d runtime connections, want %d", h.dials, tt.wantDials)
			}
		})
	}
}

func TestPreflightPhaseFlags(t *testing.T) {
	p := PreflightPhase()
	want := []string{"config", "cri-socket", "dry-run", "ignore-preflight-errors", "image-repository"}
	if strings.Join(p.InheritFlags, ",") != strings.Join(want, ",") {
		t.Errorf("InheritFlags = %v, want %v", p.InheritFlags, want)
	}
}
