package selfhosting

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// staticManifest is a component's manifest as init writes it by default
// (the static Pod package's golden file).
func staticManifest(t *testing.T, comp string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "staticpod", "testdata", "default", comp+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func staticPod(t *testing.T, comp string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(staticManifest(t, comp), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestDaemonSetGolden turns each default static Pod into its DaemonSet and
// compares it with testdata/daemonset-<component>.yaml (-update rewrites
// them), then checks what the mode relies on.
func TestDaemonSetGolden(t *testing.T) {
	for _, comp := range Components() {
		t.Run(comp, func(t *testing.T) {
			pod := staticPod(t, comp)
			before := pod.DeepCopy()
			ds, err := DaemonSet(comp, pod)
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(ds)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "daemonset-"+comp+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the DaemonSet differs from %s (run with -update to accept):\n%s", golden, got)
			}
			if !equalYAML(t, pod, before) {
				t.Error("DaemonSet changed the static Pod it was given")
			}
			if ds.Name != "self-hosted-"+comp || ds.Namespace != "kube-system" || ds.Spec.Selector.MatchLabels["k8s-app"] != ds.Name {
				t.Errorf("name %s/%s, selector %v", ds.Namespace, ds.Name, ds.Spec.Selector.MatchLabels)
			}
			tpl := ds.Spec.Template
			if tpl.Labels["k8s-app"] != ds.Name || tpl.Labels["component"] != comp {
				t.Errorf("template labels %v", tpl.Labels)
			}
			spec := tpl.Spec
			if _, ok := spec.NodeSelector[noderole.ControlPlaneLabel]; !ok || len(spec.NodeSelector) != 1 {
				t.Errorf("node selector %v", spec.NodeSelector)
			}
			if !hasToleration(spec.Tolerations, corev1.Toleration{Key: noderole.ControlPlaneLabel, Effect: corev1.TaintEffectNoSchedule}) {
				t.Errorf("tolerations %v", spec.Tolerations)
			}
			if spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet || !spec.HostNetwork || spec.Priority != nil {
				t.Errorf("dnsPolicy %s, hostNetwork %v, priority %v", spec.DNSPolicy, spec.HostNetwork, spec.Priority)
			}
			c := spec.Containers[0]
			if len(c.Ports) != 0 {
				t.Errorf("ports %v: a host port would keep the DaemonSet Pod off the node of the static Pod", c.Ports)
			}
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.Type != intstr.Int {
					t.Errorf("a probe still names its port: %v", p.HTTPGet.Port)
				}
			}
			if c.Image != pod.Spec.Containers[0].Image || strings.Join(c.Command, " ") != strings.Join(pod.Spec.Containers[0].Command, " ") {
				t.Error("the container's image or command changed")
			}
		})
	}
}

func TestDaemonSetRefusesUnknownProbePort(t *testing.T) {
	pod := staticPod(t, staticpod.KubeScheduler)
	pod.Spec.Containers[0].Ports = nil
	if _, err := DaemonSet(staticpod.KubeScheduler, pod); err == nil || !strings.Contains(err.Error(), "probe-port") {
		t.Errorf("got %v, want an error naming the port", err)
	}
}

func equalYAML(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// dsPod is a DaemonSet Pod of comp whose container last started at at.
func dsPod(comp string, at time.Time) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(comp) + "-x", Labels: map[string]string{AppLabel: DaemonSetName(comp)}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}},
		}}},
	}
}

func TestStarted(t *testing.T) {
	at := time.Date(2026, 11, 28, 20, 0, 0, 500, time.UTC)
	crashed := dsPod(staticpod.KubeAPIServer, at)
	crashed.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	crashed.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		StartedAt: metav1.NewTime(at), FinishedAt: metav1.NewTime(at.Add(2 * time.Second)),
	}}
	deleting := dsPod(staticpod.KubeAPIServer, at)
	deleting.DeletionTimestamp = &metav1.Time{Time: at}
	for _, tc := range []struct {
		name  string
		pods  []corev1.Pod
		since time.Time
		want  bool
	}{
		{"none", nil, time.Time{}, false},
		{"started after", []corev1.Pod{dsPod(staticpod.KubeAPIServer, at)}, at.Add(-time.Second), true},
		{"started the same second", []corev1.Pod{dsPod(staticpod.KubeAPIServer, at.Truncate(time.Second))}, at, true},
		{"started before", []corev1.Pod{dsPod(staticpod.KubeAPIServer, at)}, at.Add(time.Second), false},
		{"crashed after", []corev1.Pod{crashed}, at.Add(time.Second), true},
		{"another component", []corev1.Pod{dsPod(staticpod.KubeScheduler, at)}, time.Time{}, false},
		{"being deleted", []corev1.Pod{deleting}, time.Time{}, false},
		{"never started", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{AppLabel: DaemonSetName(staticpod.KubeAPIServer)}}}}, time.Time{}, false},
	} {
		if got := Started(tc.pods, staticpod.KubeAPIServer, tc.since); got != tc.want {
			t.Errorf("%s: Started = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// loopFixture is a node's folders with checkpoints of every component and
// a checkpointer loop over them whose view of the world the test sets.
type loopFixture struct {
	manifests, checkpoints string
	loop                   *CheckpointerLoop
	now                    time.Time
	down                   map[string]bool
	pods                   []corev1.Pod
	apiDown                bool
	logs                   []string
}

func newLoopFixture(t *testing.T) *loopFixture {
	t.Helper()
	dir := t.TempDir()
	f := &loopFixture{
		manifests:   filepath.Join(dir, "manifests"),
		checkpoints: filepath.Join(dir, "self-hosted"),
		now:         time.Now(),
		down:        map[string]bool{},
	}
	for _, d := range []string{f.manifests, f.checkpoints} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, comp := range Components() {
		if err := os.WriteFile(CheckpointPath(f.checkpoints, comp), staticManifest(t, comp), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(staticpod.ManifestPath(f.manifests, Checkpointer), []byte("kind: Pod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.loop = &CheckpointerLoop{
		ManifestDir: f.manifests, CheckpointDir: f.checkpoints,
		Pods: func(context.Context) ([]corev1.Pod, error) {
			if f.apiDown {
				return nil, errors.New("connection refused")
			}
			return f.pods, nil
		},
		Healthy: func(_ context.Context, pod *corev1.Pod) error {
			if f.down[pod.Name] {
				return errors.New("connection refused")
			}
			return nil
		},
		Now:   func() time.Time { return f.now },
		Grace: 30 * time.Second,
		Logf:  func(format string, args ...any) { f.logs = append(f.logs, format) },
	}
	return f
}

func (f *loopFixture) step(t *testing.T) {
	t.Helper()
	if err := f.loop.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (f *loopFixture) active(comp string) bool {
	_, err := os.Stat(staticpod.ManifestPath(f.manifests, comp))
	return err == nil
}

// TestCheckpointerAfterBoot: on a node that has just booted nothing of the
// control plane runs; the API server's checkpoint is put in place at once,
// and taken away once the kubelet has started the API server's DaemonSet
// Pod again; the controller manager, whose DaemonSet Pod then runs, never
// needs its checkpoint.
func TestCheckpointerAfterBoot(t *testing.T) {
	f := newLoopFixture(t)
	for _, comp := range Components() {
		f.down[comp] = true
	}
	f.apiDown = true
	f.step(t)
	if !f.active(staticpod.KubeAPIServer) || f.active(staticpod.KubeScheduler) || f.active(staticpod.KubeControllerManager) {
		t.Fatal("after the first look, only the API server's checkpoint should be in place")
	}
	if got, want := readFile(t, staticpod.ManifestPath(f.manifests, staticpod.KubeAPIServer)), staticManifest(t, staticpod.KubeAPIServer); !bytes.Equal(got, want) {
		t.Error("the active checkpoint is not the saved manifest")
	}
	st, err := os.Stat(staticpod.ManifestPath(f.manifests, staticpod.KubeAPIServer))
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint runs; the API server answers; the DaemonSet Pod's
	// status is still the one from before the restart.
	// The controller manager's and scheduler's DaemonSet Pods run as soon
	// as the API server answers.
	for _, comp := range Components() {
		f.down[comp] = false
	}
	f.apiDown = false
	f.pods = []corev1.Pod{dsPod(staticpod.KubeAPIServer, st.ModTime().Add(-time.Hour))}
	f.step(t)
	if !f.active(staticpod.KubeAPIServer) {
		t.Fatal("the checkpoint was removed before the kubelet knew the DaemonSet Pod again")
	}
	f.pods = []corev1.Pod{dsPod(staticpod.KubeAPIServer, st.ModTime().Add(2*time.Second))}
	f.step(t)
	if f.active(staticpod.KubeAPIServer) {
		t.Fatal("the checkpoint stayed after the DaemonSet Pod started again")
	}
	if len(f.logs) != 2 {
		t.Errorf("logs: %q", f.logs)
	}
	// The DaemonSet Pod waits out the kubelet's restart delay, which may
	// be long after many crashes: the checkpoint is not put back meanwhile.
	f.down[staticpod.KubeAPIServer] = true
	f.step(t)
	f.now = f.now.Add(HandOverWait - time.Second)
	f.step(t)
	if f.active(staticpod.KubeAPIServer) {
		t.Fatal("the checkpoint was put back while the DaemonSet Pod may still be waiting to restart")
	}
	f.now = f.now.Add(2 * time.Second)
	f.step(t)
	f.now = f.now.Add(f.loop.Grace)
	f.step(t)
	if !f.active(staticpod.KubeAPIServer) {
		t.Fatal("the checkpoint was not put back after the hand-over wait and the grace period")
	}
}

// TestCheckpointerGrace: a component that goes down while the checkpointer
// runs gets its checkpoint only after the grace period, and one that comes
// back in time none.
func TestCheckpointerGrace(t *testing.T) {
	f := newLoopFixture(t)
	f.step(t) // everything healthy
	f.down[staticpod.KubeScheduler] = true
	f.down[staticpod.KubeControllerManager] = true
	f.step(t)
	f.now = f.now.Add(20 * time.Second)
	f.down[staticpod.KubeControllerManager] = false
	f.step(t)
	if f.active(staticpod.KubeScheduler) {
		t.Fatal("the scheduler's checkpoint was put in place before the grace period passed")
	}
	f.now = f.now.Add(11 * time.Second)
	f.down[staticpod.KubeControllerManager] = true
	f.step(t)
	if !f.active(staticpod.KubeScheduler) {
		t.Error("the scheduler's checkpoint is not in place after the grace period")
	}
	if f.active(staticpod.KubeControllerManager) {
		t.Error("the controller manager came back in between, yet its checkpoint is in place")
	}
}

// TestCheckpointerStandsDown: without its own manifest (Unpivot removed
// it), or without a checkpoint, nothing is touched.
func TestCheckpointerStandsDown(t *testing.T) {
	f := newLoopFixture(t)
	if err := os.Remove(CheckpointPath(f.checkpoints, staticpod.KubeScheduler)); err != nil {
		t.Fatal(err)
	}
	for _, comp := range Components() {
		f.down[comp] = true
	}
	f.step(t)
	if f.active(staticpod.KubeScheduler) {
		t.Error("a component without a checkpoint got a manifest")
	}
	if err := os.Remove(staticpod.ManifestPath(f.manifests, staticpod.KubeAPIServer)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(staticpod.ManifestPath(f.manifests, Checkpointer)); err != nil {
		t.Fatal(err)
	}
	f.loop.down = nil
	f.step(t)
	if f.active(staticpod.KubeAPIServer) {
		t.Error("the checkpointer acted without its own manifest")
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPivotRefusesSeveralControlPlaneNodes: the DaemonSet would start a
// second copy beside the static Pods of the other nodes; nothing is
// changed.
func TestPivotRefusesSeveralControlPlaneNodes(t *testing.T) {
	cp := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{noderole.ControlPlaneLabel: ""}}}
	}
	recorded := false
	n := Node{
		Client:   fake.NewClientset(cp("cp1"), cp("cp2")),
		NodeName: "cp1",
		Record:   func(context.Context, bool) error { recorded = true; return nil },
		Timeout:  time.Second, Interval: 10 * time.Millisecond,
	}
	err := n.Pivot(context.Background())
	if err == nil || !strings.Contains(err.Error(), "one control-plane node") {
		t.Fatalf("got %v", err)
	}
	if recorded {
		t.Error("the mode was recorded in kubeadm-config")
	}
}

// TestCheckpointerAfterPivot: a manifest that Pivot removed counts as
// handed over: the API server, down while its DaemonSet Pod waits to
// restart, gets no checkpoint within the hand-over wait; the scheduler,
// whose DaemonSet Pod is bound to the node, none at all.
func TestCheckpointerAfterPivot(t *testing.T) {
	f := newLoopFixture(t)
	pivot := func(comp string) {
		t.Helper()
		manifest := staticpod.ManifestPath(f.manifests, comp)
		if err := os.WriteFile(manifest, staticManifest(t, comp), 0o600); err != nil {
			t.Fatal(err)
		}
		f.step(t)
		if err := os.Remove(manifest); err != nil {
			t.Fatal(err)
		}
	}
	waiting := dsPod(staticpod.KubeScheduler, f.now.Add(-time.Minute))
	waiting.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	pivot(staticpod.KubeScheduler)
	f.pods = []corev1.Pod{waiting}
	f.down[staticpod.KubeScheduler] = true
	f.step(t)
	f.now = f.now.Add(time.Minute)
	f.step(t)
	if f.active(staticpod.KubeScheduler) {
		t.Error("the scheduler's checkpoint was put in place while its DaemonSet Pod is bound to the node")
	}
	pivot(staticpod.KubeAPIServer)
	f.down[staticpod.KubeAPIServer], f.apiDown = true, true
	f.step(t)
	f.now = f.now.Add(time.Minute)
	f.step(t)
	if f.active(staticpod.KubeAPIServer) {
		t.Error("the API server's checkpoint was put in place right after the pivot removed its manifest")
	}
}

// TestCheckpointerStandIns: the controller manager's and the scheduler's
// checkpoints stand in only while the API server answers and the node has
// no DaemonSet Pod of them (a rolling update deleted it, and no controller
// manager makes the new one, or no scheduler binds it); once it has one,
// the checkpoint steps aside, whichever holds the ports.
func TestCheckpointerStandIns(t *testing.T) {
	f := newLoopFixture(t)
	sched, kcm := staticpod.KubeScheduler, staticpod.KubeControllerManager
	// After a boot: no API server yet, nothing runs.
	f.apiDown = true
	f.down[sched], f.down[kcm], f.down[staticpod.KubeAPIServer] = true, true, true
	f.step(t)
	f.now = f.now.Add(time.Minute)
	f.step(t)
	if f.active(sched) || f.active(kcm) {
		t.Fatal("a checkpoint of the scheduler or the controller manager was put in place while the API server did not answer")
	}
	// The API server answers; the DaemonSet Pods are bound, in the
	// kubelet's restart delay for longer than the grace period.
	f.apiDown, f.down[staticpod.KubeAPIServer] = false, false
	f.pods = []corev1.Pod{dsPod(sched, f.now.Add(-time.Hour)), dsPod(kcm, f.now.Add(-time.Hour))}
	f.step(t)
	f.now = f.now.Add(f.loop.Grace + time.Second)
	f.step(t)
	if f.active(sched) || f.active(kcm) {
		t.Fatal("a checkpoint was put in place while the kubelet has the component's DaemonSet Pod")
	}
	// A rolling update deleted the scheduler's Pod; its new one waits
	// for a scheduler.
	deleting := dsPod(sched, f.now.Add(-time.Hour))
	deleting.DeletionTimestamp = &metav1.Time{Time: f.now}
	f.pods = []corev1.Pod{deleting, dsPod(kcm, f.now.Add(-time.Hour))}
	f.step(t)
	f.now = f.now.Add(f.loop.Grace - time.Second)
	f.step(t)
	if f.active(sched) {
		t.Fatal("the scheduler's checkpoint was put in place before the grace period passed")
	}
	f.now = f.now.Add(2 * time.Second)
	f.step(t)
	if !f.active(sched) || f.active(kcm) {
		t.Fatal("only the scheduler's checkpoint should be in place")
	}
	// The checkpoint bound the new Pod: it steps aside, even though the
	// new Pod's container has not started yet.
	bound := dsPod(sched, time.Time{})
	bound.Status = corev1.PodStatus{Phase: corev1.PodPending}
	f.pods = []corev1.Pod{bound, dsPod(kcm, f.now.Add(-time.Hour))}
	f.step(t)
	if f.active(sched) {
		t.Fatal("the scheduler's checkpoint stayed after its new DaemonSet Pod was bound to the node")
	}
	// A finished Pod is not run again.
	failed := dsPod(kcm, f.now.Add(-time.Hour))
	failed.Status.Phase = corev1.PodFailed
	f.pods = []corev1.Pod{bound, failed}
	f.step(t)
	f.now = f.now.Add(f.loop.Grace + time.Second)
	f.step(t)
	if !f.active(kcm) {
		t.Error("the controller manager's checkpoint was not put in place when its only Pod had failed")
	}
}

// mirrorPod is the mirror Pod of comp's checkpoint, its container waiting
// to restart after it ended at ended.
func mirrorPod(comp string, ended time.Time) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: comp + "-node1", Labels: map[string]string{"component": comp}, Annotations: map[string]string{MirrorAnnotation: "x"}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(ended), FinishedAt: metav1.NewTime(ended)}},
		}}},
	}
}

// TestCheckpointerLostPorts: the API server's checkpoint was put in place
// while its DaemonSet Pod ran (etcd's restart kept it from answering for a
// while); the DaemonSet Pod kept the ports and never restarts, the
// checkpoint crashes: it is removed once the API server answers.
func TestCheckpointerLostPorts(t *testing.T) {
	f := newLoopFixture(t)
	api := staticpod.KubeAPIServer
	f.step(t)
	f.down[api] = true
	f.step(t)
	f.now = f.now.Add(f.loop.Grace + time.Second)
	f.step(t)
	if !f.active(api) {
		t.Fatal("the checkpoint was not put in place after the grace period")
	}
	st, err := os.Stat(staticpod.ManifestPath(f.manifests, api))
	if err != nil {
		t.Fatal(err)
	}
	ds := dsPod(api, st.ModTime().Add(-5*time.Second))
	ds.Labels["component"] = api
	f.down[api] = false
	f.pods = []corev1.Pod{ds, mirrorPod(api, st.ModTime().Add(-time.Hour))}
	f.step(t)
	if !f.active(api) {
		t.Fatal("the checkpoint was removed though its container had not ended since it was put in place")
	}
	f.pods = []corev1.Pod{ds, mirrorPod(api, st.ModTime().Add(3*time.Second))}
	f.step(t)
	if f.active(api) {
		t.Fatal("the checkpoint that lost the ports stayed")
	}
}
