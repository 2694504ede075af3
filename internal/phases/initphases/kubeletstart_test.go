package initphases

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

const kubeletStartTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
  criSocket: unix:///run/crio/crio.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

// ksSystem is a fake machine for the kubelet service: it records the
// commands and never runs them.
type ksSystem struct {
	paths map[string]bool
	out   map[string]string
	calls []string
}

func (s *ksSystem) Exists(p string) bool { return s.paths[p] }
func (s *ksSystem) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	s.calls = append(s.calls, line)
	return []byte(s.out[line]), nil
}

// kubeletStartData returns phase data writing under a temporary folder,
// from the test configuration with extra appended to the ClusterConfiguration.
func kubeletStartData(t *testing.T, extra string) (*Data, *bytes.Buffer) {
	t.Helper()
	cfg := configtest.InitConfiguration(t, kubeletStartTestConfig+extra, "10.0.0.5")
	out := &bytes.Buffer{}
	return &Data{
		Cfg:        cfg,
		KubeletDir: filepath.Join(t.TempDir(), "var", "lib", "kubelet"),
		Out:        out,
		Now:        time.Now,
	}, out
}

func systemdHost(hostname string) (kubeletStartHost, *ksSystem) {
	sys := &ksSystem{
		paths: map[string]bool{"/run/systemd/system": true},
		out:   map[string]string{"systemctl is-active systemd-resolved": "active\n"},
	}
	return kubeletStartHost{system: sys, hostname: func() (string, error) { return hostname, nil }}, sys
}

func TestKubeletStartPhase(t *testing.T) {
	d, out := kubeletStartData(t, "")
	host, sys := systemdHost("vm")
	if err := runKubeletStart(context.Background(), d, host, d.Out); err != nil {
		t.Fatal(err)
	}
	wantCalls := []string{
		"systemctl status kubelet", "systemctl stop kubelet",
		"systemctl is-active systemd-resolved",
		"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet",
	}
	if !reflect.DeepEqual(sys.calls, wantCalls) {
		t.Errorf("commands = %q, want %q", sys.calls, wantCalls)
	}
	wantOut := strings.Join([]string{
		`[kubelet-start] Writing kubelet environment file with flags to file "` + filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile) + `"`,
		`[kubelet-start] Writing kubelet configuration to file "` + filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile) + `"`,
		`[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kubeletconfiguration"`,
		`[kubelet-start] Writing kubelet configuration to file "` + filepath.Join(d.KubeletDir, kubelet.ConfigFile) + `"`,
		`[kubelet-start] Starting the kubelet`,
	}, "\n") + "\n"
	if out.String() != wantOut {
		t.Errorf("output:\n%s\nwant:\n%s", out, wantOut)
	}
	env, _ := os.ReadFile(filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile))
	if string(env) != "KUBELET_KUBEADM_ARGS=\"--hostname-override=node1\"\n" {
		t.Errorf("kubeadm-flags.env = %q", env)
	}
	inst, _ := os.ReadFile(filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile))
	if string(inst) != "containerRuntimeEndpoint: \"unix:///run/crio/crio.sock\"\n" {
		t.Errorf("instance-config.yaml = %q", inst)
	}
	conf, _ := os.ReadFile(filepath.Join(d.KubeletDir, kubelet.ConfigFile))
	for _, want := range []string{"\nresolvConf: /run/systemd/resolve/resolv.conf\n", "\ncontainerRuntimeEndpoint: unix:///run/crio/crio.sock\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, conf)
		}
	}

	// A second run converges on the same files.
	before := ksReadDir(t, d.KubeletDir)
	if err := runKubeletStart(context.Background(), d, host, d.Out); err != nil {
		t.Fatal(err)
	}
	if after := ksReadDir(t, d.KubeletDir); !reflect.DeepEqual(before, after) {
		t.Errorf("second run changed the files")
	}
}

func TestKubeletStartPhaseDryRun(t *testing.T) {
	d, out := kubeletStartData(t, "")
	d.DryRun = true
	host, sys := systemdHost("node1")
	if err := runKubeletStart(context.Background(), d, host, d.Out); err != nil {
		t.Fatal(err)
	}
	// Only the read-only question about systemd-resolved is asked.
	if want := []string{"systemctl is-active systemd-resolved"}; !reflect.DeepEqual(sys.calls, want) {
		t.Errorf("commands = %q, want %q", sys.calls, want)
	}
	if strings.Contains(out.String(), "Starting the kubelet") {
		t.Errorf("dry run announced a start:\n%s", out)
	}
	if got := len(ksReadDir(t, d.KubeletDir)); got != 3 {
		t.Errorf("dry run wrote %d files into its folder, want 3", got)
	}
}

func TestKubeletStartPhaseNoInitSystem(t *testing.T) {
	d, out := kubeletStartData(t, "")
	sys := &ksSystem{}
	host := kubeletStartHost{system: sys, hostname: func() (string, error) { return "node1", nil }}
	if err := runKubeletStart(context.Background(), d, host, d.Out); err != nil {
		t.Fatal(err)
	}
	if len(sys.calls) != 0 {
		t.Errorf("commands run without an init system: %q", sys.calls)
	}
	for _, want := range []string{"not stopped", "WARNING: cannot tell whether systemd-resolved", "Starting the kubelet", "not started"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestKubeletStartPhaseErrors(t *testing.T) {
	d, _ := kubeletStartData(t, "")
	host, sys := systemdHost("node1")
	host.hostname = func() (string, error) { return "", errors.New("no name") }
	if err := runKubeletStart(context.Background(), d, host, d.Out); err == nil || !strings.Contains(err.Error(), "host name") {
		t.Errorf("error = %v", err)
	}
	if len(sys.calls) != 0 {
		t.Errorf("the kubelet was touched before the failure: %q", sys.calls)
	}

	d, _ = kubeletStartData(t, "")
	d.Cfg.ComponentConfigs.Kubelet = nil
	host, _ = systemdHost("node1")
	if err := runKubeletStart(context.Background(), d, host, d.Out); err == nil {
		t.Error("a missing KubeletConfiguration was accepted")
	}

	// A folder that cannot be created fails the phase, naming it.
	d, _ = kubeletStartData(t, "")
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.KubeletDir = filepath.Join(blocker, "kubelet")
	if err := runKubeletStart(context.Background(), d, host, d.Out); err == nil || !strings.Contains(err.Error(), d.KubeletDir) {
		t.Errorf("error = %v", err)
	}
}

func TestKubeletStartPhaseFlags(t *testing.T) {
	p := KubeletStartPhase()
	want := []string{"config", "cri-socket", "dry-run", "image-repository", "node-name", "patches"}
	if !reflect.DeepEqual(p.InheritFlags, want) {
		t.Errorf("InheritFlags = %v, want %v", p.InheritFlags, want)
	}
}

func ksReadDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}
