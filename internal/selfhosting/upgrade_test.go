package selfhosting

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// upgradeFixture is a self-hosted node at the old version whose API
// server and kubelet the test plays: the DaemonSet's Pods are what it
// puts into the fake clientset.
type upgradeFixture struct {
	node                   Node
	client                 *fake.Clientset
	manifests, checkpoints string
	down                   bool
}

func newUpgradeFixture(t *testing.T, comp string) *upgradeFixture {
	t.Helper()
	dir := t.TempDir()
	f := &upgradeFixture{manifests: filepath.Join(dir, "manifests"), checkpoints: filepath.Join(dir, "self-hosted")}
	for _, d := range []string{f.manifests, f.checkpoints} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(CheckpointPath(f.checkpoints, comp), staticManifest(t, comp), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := DaemonSet(comp, staticPod(t, comp))
	if err != nil {
		t.Fatal(err)
	}
	f.client = fake.NewClientset(ds)
	f.node = Node{
		Client: f.client, NodeName: "node1", ManifestDir: f.manifests, CheckpointDir: f.checkpoints,
		Healthy: func(context.Context, *corev1.Pod) error {
			if f.down {
				return errors.New("connection refused")
			}
			return nil
		},
		Timeout: 300 * time.Millisecond, Interval: 10 * time.Millisecond, Out: io.Discard,
	}
	return f
}

// newVersion is comp's manifest with another image tag.
func newVersion(t *testing.T, comp string) []byte {
	t.Helper()
	pod := staticPod(t, comp)
	pod.Spec.Containers[0].Image += "-new"
	data, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// addPod adds the node's DaemonSet Pod running pod's containers, ready.
func (f *upgradeFixture) addPod(t *testing.T, comp string, pod *corev1.Pod) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: DaemonSetName(comp) + "-abcde", Namespace: metav1.NamespaceSystem, Labels: map[string]string{AppLabel: DaemonSetName(comp), "component": comp}},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: pod.Spec.Containers},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{
				StartedAt: metav1.NewTime(time.Now().Add(-time.Minute)),
			}}}},
		},
	}
	if _, err := f.client.CoreV1().Pods(metav1.NamespaceSystem).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeUnchanged: a component whose checkpoint, DaemonSet and Pod
// are at the new version already is left alone; a DaemonSet the pivot
// made (without the template's hash) is written once, and its Pod, which
// runs the template already, taken as it is.
func TestUpgradeUnchanged(t *testing.T) {
	comp := staticpod.KubeScheduler
	f := newUpgradeFixture(t, comp)
	f.addPod(t, comp, staticPod(t, comp))
	for i, want := range []bool{true, false} {
		f.client.ClearActions()
		old, changed, err := f.node.Upgrade(context.Background(), comp, staticManifest(t, comp))
		if err != nil || changed != want || !bytes.Equal(old, staticManifest(t, comp)) {
			t.Fatalf("run %d: Upgrade = changed %v, %v; want changed %v", i+1, changed, err, want)
		}
		if _, err := os.Stat(staticpod.ManifestPath(f.manifests, comp)); err == nil {
			t.Errorf("run %d: a checkpoint was put in place", i+1)
		}
	}
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("the second run made a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestUpgradeStandsInForTheScheduler: the scheduler's old Pod is gone and
// nothing binds its new one: the new checkpoint is put in place, once; the
// upgrade waits for the new Pod.
func TestUpgradeStandsInForTheScheduler(t *testing.T) {
	comp := staticpod.KubeScheduler
	f := newUpgradeFixture(t, comp)
	f.down = true
	data := newVersion(t, comp)
	old, changed, err := f.node.Upgrade(context.Background(), comp, data)
	if err == nil || !changed || !bytes.Equal(old, staticManifest(t, comp)) {
		t.Fatalf("Upgrade = changed %v, %v", changed, err)
	}
	if got := readFile(t, CheckpointPath(f.checkpoints, comp)); !bytes.Equal(got, data) {
		t.Error("the checkpoint does not hold the new manifest")
	}
	if got := readFile(t, staticpod.ManifestPath(f.manifests, comp)); !bytes.Equal(got, data) {
		t.Error("the new checkpoint was not put in place")
	}
	ds, err := f.client.AppsV1().DaemonSets(metav1.NamespaceSystem).Get(context.Background(), DaemonSetName(comp), metav1.GetOptions{})
	if err != nil || !strings.HasSuffix(ds.Spec.Template.Spec.Containers[0].Image, "-new") {
		t.Errorf("the DaemonSet was not updated: %v", err)
	}
}

// TestUpgradeWaitsForTheScheduler: while the old Pod is bound to the node
// (the rolling update has not deleted it yet) nothing stands in.
func TestUpgradeWaitsForTheScheduler(t *testing.T) {
	comp := staticpod.KubeScheduler
	f := newUpgradeFixture(t, comp)
	f.addPod(t, comp, staticPod(t, comp))
	f.down = true
	if _, _, err := f.node.Upgrade(context.Background(), comp, newVersion(t, comp)); err == nil {
		t.Fatal("Upgrade succeeded while the old Pod runs")
	}
	if _, err := os.Stat(staticpod.ManifestPath(f.manifests, comp)); err == nil {
		t.Error("the checkpoint was put in place while the node had a DaemonSet Pod of the scheduler")
	}
}

// TestUpgradeStandsInForTheAPIServer: the API server's old Pod is gone,
// and no API server answers: the new checkpoint is put in place.
func TestUpgradeStandsInForTheAPIServer(t *testing.T) {
	comp := staticpod.KubeAPIServer
	f := newUpgradeFixture(t, comp)
	f.addPod(t, comp, staticPod(t, comp))
	updated := false
	f.client.PrependReactor("update", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		updated = true
		return false, nil, nil
	})
	f.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if updated {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f.down = true
	data := newVersion(t, comp)
	if _, _, err := f.node.Upgrade(context.Background(), comp, data); err == nil {
		t.Fatal("Upgrade succeeded without an API server")
	}
	if got := readFile(t, staticpod.ManifestPath(f.manifests, comp)); !bytes.Equal(got, data) {
		t.Error("the new checkpoint was not put in place")
	}
}

// TestUpgradeStandsInOnce: a new checkpoint that stood in once (here, the
// checkpointer's) is not put in place again when the component is away
// during the hand-over; an old one that stood in does not count.
func TestUpgradeStandsInOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, want bool
	}{{"the new checkpoint stood in", false, false}, {"an old checkpoint stood in", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			comp := staticpod.KubeScheduler
			f := newUpgradeFixture(t, comp)
			data := newVersion(t, comp)
			active := staticpod.ManifestPath(f.manifests, comp)
			standIn := data
			if tc.old {
				standIn = staticManifest(t, comp)
			}
			if err := os.WriteFile(active, standIn, 0o600); err != nil {
				t.Fatal(err)
			}
			looks := 0
			f.node.Healthy = func(context.Context, *corev1.Pod) error {
				if looks++; looks == 2 {
					// The checkpointer hands over.
					if err := os.Remove(active); err != nil {
						t.Error(err)
					}
				}
				return errors.New("connection refused")
			}
			if _, _, err := f.node.Upgrade(context.Background(), comp, data); err == nil {
				t.Fatal("Upgrade succeeded without the new Pod")
			}
			_, err := os.Stat(active)
			if placed := err == nil; placed != tc.want {
				t.Errorf("the new checkpoint put in place again: %v, want %v", placed, tc.want)
			}
		})
	}
}
