package initphases

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// systemctlRecorder records the commands the phases run.
type systemctlRecorder struct{ calls []string }

func (r *systemctlRecorder) Exists(string) bool { return true }
func (r *systemctlRecorder) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.calls = append(r.calls, strings.Join(append([]string{name}, args...), " "))
	return nil, nil
}

// With HostProcessControlPlane the etcd and control-plane phases write
// units with the manifests' command lines instead of manifests, and start
// them; run again, they change nothing and only make sure each runs.
func TestHostProcessPhasesWriteUnits(t *testing.T) {
	d, out := staticPodData(t, "featureGates:\n  HostProcessControlPlane: true\n")
	r := &systemctlRecorder{}
	d.InitSystem, d.SystemRoot = r, t.TempDir()
	// The bare names only, as a user who keeps one version has them.
	d.LookPath = func(f string) (string, error) {
		if strings.Contains(f, "-v") {
			return "", errors.New("not found")
		}
		return "/opt/k8s/" + f, nil
	}
	run := func() {
		t.Helper()
		for _, p := range []workflow.Phase[*Data]{EtcdPhase(), ControlPlanePhase()} {
			if err := workflow.RunTree(context.Background(), p, d, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if entries, _ := os.ReadDir(d.ManifestDir); len(entries) > 0 {
		t.Errorf("manifests were written: %v", entries)
	}
	for _, c := range hostprocess.Components() {
		pod, ours, err := hostprocess.ReadUnit(hostprocess.UnitPath(d.SystemRoot, c), c)
		if err != nil || !ours {
			t.Fatalf("unit of %s: %v (ours %v)", c, err, ours)
		}
		want, err := BuildPod(d, c)
		if err != nil {
			t.Fatal(err)
		}
		got := pod.Spec.Containers[0].Command
		if got[0] != "/opt/k8s/"+c || !slices.Equal(got[1:], want.Spec.Containers[0].Command[1:]) {
			t.Errorf("%s runs %q, its manifest %q", c, got, want.Spec.Containers[0].Command)
		}
	}
	if !strings.Contains(out.String(), "[control-plane] Creating the systemd unit for \"kube-scheduler\"") {
		t.Errorf("output:\n%s", out)
	}
	wantFirst := []string{"systemctl daemon-reload", "systemctl enable etcd.service", "systemctl restart etcd.service", "systemctl daemon-reload", "systemctl enable kube-apiserver.service"}
	if !slices.Equal(r.calls[:5], wantFirst) || len(r.calls) != 12 {
		t.Errorf("first run: %q", r.calls)
	}
	r.calls = nil
	run()
	for _, c := range r.calls {
		if strings.Contains(c, "restart") || strings.Contains(c, "daemon-reload") {
			t.Errorf("second run: %q", r.calls)
			break
		}
	}
	// The health checks read the components' addresses from the units.
	w := newHealthWaiter(d, HealthChecks{})
	comps, err := w.components()
	if err != nil {
		t.Fatal(err)
	}
	if comps[0].url != "https://10.0.0.5:6443/livez" || comps[2].url != "https://127.0.0.1:10259/livez" {
		t.Errorf("health URLs %q %q", comps[0].url, comps[2].url)
	}
}

// A missing program stops the phase before any unit is written.
func TestHostProcessPhaseNeedsTheProgram(t *testing.T) {
	d, _ := staticPodData(t, "featureGates:\n  HostProcessControlPlane: true\n")
	d.InitSystem, d.SystemRoot = &systemctlRecorder{}, t.TempDir()
	d.LookPath = func(f string) (string, error) { return "", errors.New("not found") }
	err := runControlPlaneComponent(context.Background(), d, staticpod.KubeScheduler)
	if err == nil || !strings.Contains(err.Error(), "finding the kube-scheduler program: neither kube-scheduler-v1.36.3 nor kube-scheduler is in the PATH") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.SystemRoot, hostprocess.UnitDir)); err == nil {
		t.Errorf("the unit folder was made")
	}
}
