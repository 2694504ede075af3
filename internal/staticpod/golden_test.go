package staticpod

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// goldenCase is a configuration file under testdata/configs and the host
// facts its manifests are built with.
type goldenCase struct {
	name    string
	exists  []string // host paths that exist
	environ []string
	// oursOnly: the case uses what upstream does not have (the
	// CISHardening feature gate); TestAgainstUpstream passes it over.
	oursOnly bool
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "default"},
		{name: "ipv6", exists: []string{
			"/etc/ca-certificates", "/etc/pki/ca-trust", "/etc/pki/tls/certs",
			"/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
		}},
		{name: "dualstack", exists: []string{"/etc/ca-certificates", "/usr/share/ca-certificates"}},
		{name: "external-etcd", exists: []string{"/etc/pki/ca-trust", "/etc/pki/tls/certs"}},
		{name: "extras",
			exists: []string{"/usr/local/share/ca-certificates"},
			environ: []string{
				"HTTP_PROXY=http://proxy:3128",
				"https_proxy=http://sproxy:3128",
				"HTTPS_PROXY=http://from-env:3128",
				"NO_PROXY=localhost,10.0.0.0/8",
				"no_proxy=",
				"NOT_A_PROXY_VAR=x",
			}},
		{name: "edge", environ: []string{"all_proxy=socks5://p:1080", "ftp_proxy=f"}},
		{name: "external-etcd-nested", exists: []string{"/etc/ca-certificates"}},
		{name: "cis", oursOnly: true},
		{name: "cis-own-admission", oursOnly: true},
	}
}

// testEnvironment is a config.Environment that never looks at the machine.
func testEnvironment() config.Environment {
	return config.Environment{
		Hostname:       func() (string, error) { return "node1", nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP("10.0.0.5"), nil },
		CRISocket:      func() (string, error) { return "unix:///run/containerd/containerd.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
		NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:           func(string, ...any) {},
	}
}

// loadConfig reads and defaults a configuration file as kubeadm init does.
func loadConfig(t *testing.T, path string) *kubeadm.InitConfiguration {
	t.Helper()
	docs, err := config.ReadFile(path, config.Strict)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := testEnvironment().InitConfiguration(context.Background(), docs, config.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (gc goldenCase) options() Options {
	set := map[string]bool{}
	for _, p := range gc.exists {
		set[p] = true
	}
	return Options{HostPathExists: func(p string) bool { return set[p] }, Environ: gc.environ}
}

func (gc goldenCase) components(cfg *kubeadm.InitConfiguration) []string {
	if cfg.Etcd.External != nil {
		return ControlPlaneComponents()
	}
	return append([]string{Etcd}, ControlPlaneComponents()...)
}

// TestGolden builds the manifests of every golden case and compares them
// byte for byte with testdata/<case>/<component>.yaml. Run with -update to
// rewrite them; TestAgainstUpstream checks them against upstream kubeadm.
func TestGolden(t *testing.T) {
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			cfg := loadConfig(t, filepath.Join("testdata", "configs", gc.name+".yaml"))
			for _, comp := range gc.components(cfg) {
				pod, err := Build(comp, &cfg.ClusterConfiguration, NodeOf(cfg), gc.options())
				if err != nil {
					t.Fatalf("%s: %v", comp, err)
				}
				got, err := Marshal(pod)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", gc.name, comp+".yaml")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(want, got) {
					diffs, _ := Compare(want, got)
					t.Errorf("%s differs from %s:\n%s\n--- got:\n%s", comp, path, strings.Join(diffs, "\n"), got)
				}
			}
		})
	}
}

// upstreamBinary is where hack/build-upstream.sh leaves upstream kubeadm.
func upstreamBinary() string {
	if p := os.Getenv("KUBEADM_UPSTREAM"); p != "" {
		return p
	}
	return filepath.Join("..", "..", ".cache", "upstream", "v1.37.2", "kubeadm")
}

// TestAgainstUpstream runs upstream kubeadm (a black box) on every golden
// case, into a scratch root file system holding the case's host paths and
// with the case's environment, and checks that it writes the golden
// manifests: same documents, same flags in the same order. It needs the
// upstream binary and root (for --rootfs); otherwise it is skipped.
func TestAgainstUpstream(t *testing.T) {
	bin, err := filepath.Abs(upstreamBinary())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("upstream kubeadm not found at %s", bin)
	}
	if os.Geteuid() != 0 {
		t.Skip("running upstream kubeadm with --rootfs needs root")
	}
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	for _, gc := range goldenCases() {
		if gc.oursOnly {
			continue
		}
		t.Run(gc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, p := range gc.exists {
				if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cfgData, err := os.ReadFile(filepath.Join("testdata", "configs", gc.name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "cfg.yaml"), cfgData, 0o644); err != nil {
				t.Fatal(err)
			}
			env := append([]string{"PATH=/usr/bin:/bin"}, gc.environ...)
			for _, phase := range [][]string{{"etcd", "local"}, {"control-plane", "all"}} {
				args := append([]string{"init", "phase"}, phase...)
				args = append(args, "--config", "/cfg.yaml", "--rootfs", root)
				cmd := exec.Command(bin, args...)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("upstream %v: %v\n%s", phase, err, out)
				}
			}
			cfg := loadConfig(t, filepath.Join("testdata", "configs", gc.name+".yaml"))
			for _, comp := range gc.components(cfg) {
				up, err := os.ReadFile(ManifestPath(filepath.Join(root, "etc", "kubernetes", "manifests"), comp))
				if err != nil {
					t.Fatal(err)
				}
				ours, err := os.ReadFile(filepath.Join("testdata", gc.name, comp+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				diffs, err := Compare(up, ours)
				if err != nil {
					t.Fatal(err)
				}
				if len(diffs) > 0 {
					t.Errorf("%s: golden file differs from upstream's manifest:\n%s", comp, strings.Join(diffs, "\n"))
				}
			}
			if cfg.Etcd.External != nil {
				if _, err := os.Stat(ManifestPath(filepath.Join(root, "etc", "kubernetes", "manifests"), Etcd)); err == nil {
					t.Errorf("upstream wrote an etcd manifest for external etcd")
				}
			}
		})
	}
}

// TestApproverGolden compares the CISHardening profile's approver Pod with
// testdata/cis/kubeadm-kubelet-serving-approver.yaml (-update rewrites it).
func TestApproverGolden(t *testing.T) {
	cfg := loadConfig(t, filepath.Join("testdata", "configs", "cis.yaml"))
	got, err := Marshal(KubeletServingApproverPod(&cfg.ClusterConfiguration, "0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "cis", KubeletServingApprover+".yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("the approver's Pod differs from %s:\n%s", path, got)
	}
}
