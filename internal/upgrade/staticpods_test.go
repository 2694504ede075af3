package upgrade_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease/leasetest"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// podManifest is a small static Pod whose liveness probe asks a named port.
func podManifest(component, version string, port int) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: kube-system
spec:
  containers:
  - name: %[1]s
    image: registry.k8s.io/%[1]s:%[2]s
    ports:
    - name: probe-port
      containerPort: %[3]d
    livenessProbe:
      httpGet:
        path: /livez
        port: probe-port
        scheme: HTTPS
`, component, version, port)
}

// healthURL is the URL the probe of podManifest(_, _, port) asks.
func healthURL(port int) string { return fmt.Sprintf("https://127.0.0.1:%d/livez", port) }

// fakeKubelet plays the kubelet and the container runtime: each time it is
// asked for a component's sandboxes and finds that component's manifest
// changed since it last looked, it starts a new Ready sandbox. The
// container in it runs, unless crash says it keeps exiting.
type fakeKubelet struct {
	t           *testing.T
	manifestDir string
	node        string
	// crash decides, from a manifest, whether its container crash-loops.
	crash func(component string, manifest []byte) bool

	seen       map[string][]byte
	sandboxes  map[string][]cri.PodSandbox // by Pod name
	containers map[string][]cri.Container  // by sandbox ID
	started    map[string]int              // sandboxes started per component
}

func newFakeKubelet(t *testing.T, manifestDir, node string) *fakeKubelet {
	return &fakeKubelet{
		t: t, manifestDir: manifestDir, node: node,
		seen: map[string][]byte{}, sandboxes: map[string][]cri.PodSandbox{},
		containers: map[string][]cri.Container{}, started: map[string]int{},
	}
}

// running registers the Pod the kubelet runs now for component, made an
// hour ago from manifest.
func (k *fakeKubelet) running(component string, manifest []byte) {
	k.seen[component] = manifest
	k.start(component, time.Now().Add(-time.Hour), false)
}

func (k *fakeKubelet) start(component string, at time.Time, crash bool) {
	pod := component + "-" + k.node
	id := fmt.Sprintf("%s-%d", pod, len(k.sandboxes[pod]))
	k.sandboxes[pod] = append(k.sandboxes[pod], cri.PodSandbox{
		ID: id, Name: pod, Namespace: "kube-system", Ready: true, CreatedAt: at,
		Labels: map[string]string{"io.kubernetes.pod.name": pod, "io.kubernetes.pod.namespace": "kube-system"},
	})
	c := cri.Container{
		ID: id + "-c", PodSandboxID: id, Name: component, State: cri.ContainerRunning, CreatedAt: at,
		Labels: map[string]string{"io.kubernetes.container.name": component},
	}
	if crash {
		c.State, c.Attempt = cri.ContainerExited, 2
	}
	k.containers[id] = append(k.containers[id], c)
}

// stop ends every sandbox and container of pod.
func (k *fakeKubelet) stop(pod string) {
	for i, b := range k.sandboxes[pod] {
		k.sandboxes[pod][i].Ready = false
		for j := range k.containers[b.ID] {
			k.containers[b.ID][j].State = cri.ContainerExited
		}
	}
}

// runs reports whether the kubelet runs component's Pod.
func (k *fakeKubelet) runs(component string) bool {
	for _, b := range k.sandboxes[component+"-"+k.node] {
		if b.Ready {
			return true
		}
	}
	return false
}

func (k *fakeKubelet) ListPodSandboxes(_ context.Context, labels map[string]string) ([]cri.PodSandbox, error) {
	if labels["io.kubernetes.pod.namespace"] != "kube-system" {
		k.t.Errorf("sandboxes asked for with labels %v: no kube-system namespace", labels)
	}
	pod := labels["io.kubernetes.pod.name"]
	component, ok := strings.CutSuffix(pod, "-"+k.node)
	if !ok {
		k.t.Errorf("sandboxes asked for Pod %q, not one of node %s", pod, k.node)
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(k.manifestDir, component+".yaml"))
	if errors.Is(err, os.ErrNotExist) {
		// The manifest is gone: the kubelet stops the Pod.
		k.stop(pod)
		k.seen[component] = nil
		return k.sandboxes[pod], nil
	}
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(data, k.seen[component]) {
		k.seen[component] = data
		k.started[component]++
		k.start(component, time.Now(), k.crash != nil && k.crash(component, data))
	}
	return k.sandboxes[pod], nil
}

func (k *fakeKubelet) ListContainers(_ context.Context, f cri.ContainerFilter) ([]cri.Container, error) {
	var out []cri.Container
	for _, c := range k.containers[f.PodSandboxID] {
		match := true
		for key, v := range f.Labels {
			if c.Labels[key] != v {
				match = false
			}
		}
		if match {
			out = append(out, c)
		}
	}
	return out, nil
}

// staticPodsFixture is a manifest folder with the v1.36.2 manifests of the
// API server and the controller manager, which the fake kubelet runs.
type staticPodsFixture struct {
	manifestDir, backupDir string
	kubelet                *fakeKubelet
	old, new               map[string][]byte
	ports                  map[string]int
	out                    bytes.Buffer
}

func newStaticPodsFixture(t *testing.T) *staticPodsFixture {
	dir := t.TempDir()
	f := &staticPodsFixture{
		manifestDir: filepath.Join(dir, "manifests"),
		backupDir:   filepath.Join(dir, "tmp", "kubeadm-backup-manifests-2026-05-01-10-00-00"),
		old:         map[string][]byte{},
		new:         map[string][]byte{},
		ports:       map[string]int{"kube-apiserver": 6443, "kube-controller-manager": 10257},
	}
	if err := os.MkdirAll(f.manifestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f.kubelet = newFakeKubelet(t, f.manifestDir, "node1")
	for comp, port := range f.ports {
		f.old[comp] = podManifest(comp, "v1.36.2", port)
		f.new[comp] = podManifest(comp, "v1.36.3", port)
		// A mode the upgrade must tighten.
		if err := os.WriteFile(filepath.Join(f.manifestDir, comp+".yaml"), f.old[comp], 0o644); err != nil {
			t.Fatal(err)
		}
		f.kubelet.running(comp, f.old[comp])
	}
	return f
}

func (f *staticPodsFixture) staticPods(healthy func(context.Context, string) error, timeout time.Duration) *upgrade.StaticPods {
	return &upgrade.StaticPods{
		ManifestDir: f.manifestDir,
		BackupDir:   f.backupDir,
		NodeName:    "node1",
		Timeout:     timeout,
		Interval:    5 * time.Millisecond,
		Runtime:     f.kubelet,
		Healthy:     healthy,
		Out:         &f.out,
	}
}

// manifests is the list Apply gets, API server first.
func (f *staticPodsFixture) manifests(data map[string][]byte) []upgrade.Manifest {
	return []upgrade.Manifest{
		{Component: "kube-apiserver", Data: data["kube-apiserver"]},
		{Component: "kube-controller-manager", Data: data["kube-controller-manager"]},
	}
}

// checkFile wants path to hold data with mode 0600.
func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s holds:\n%s\nwant:\n%s", path, got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if st.Mode().Perm() != upgrade.ManifestMode {
		t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), os.FileMode(upgrade.ManifestMode))
	}
}

func healthyAlways(context.Context, string) error { return nil }

func TestStaticPodsApplyUnchanged(t *testing.T) {
	f := newStaticPodsFixture(t)
	sp := f.staticPods(func(context.Context, string) error {
		t.Error("health asked for though no manifest changed")
		return nil
	}, time.Second)
	if err := sp.Apply(context.Background(), f.manifests(f.old)); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if _, err := os.Stat(f.backupDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the backup folder was made (%v) though nothing changed", err)
	}
	if got := sp.Changed(); len(got) != 0 {
		t.Errorf("Changed() = %v, want none", got)
	}
	for comp := range f.ports {
		if f.kubelet.started[comp] != 0 {
			t.Errorf("%s was restarted", comp)
		}
	}
	if !strings.Contains(f.out.String(), "already up to date") {
		t.Errorf("output does not say the manifests are up to date:\n%s", f.out.String())
	}
}

func TestStaticPodsApplySuccess(t *testing.T) {
	f := newStaticPodsFixture(t)
	var asked []string
	sp := f.staticPods(func(_ context.Context, url string) error {
		asked = append(asked, url)
		return nil
	}, 5*time.Second)
	var hooks []string
	ms := f.manifests(f.new)
	for i := range ms {
		comp := ms[i].Component
		ms[i].Before = func() error {
			// The hook runs before the new manifest is written.
			if b, _ := os.ReadFile(filepath.Join(f.manifestDir, comp+".yaml")); !bytes.Equal(b, f.old[comp]) {
				t.Errorf("the manifest of %s changed before its Before hook ran", comp)
			}
			hooks = append(hooks, comp)
			return nil
		}
	}
	if err := sp.Apply(context.Background(), ms); err != nil {
		t.Fatalf("Apply: %v\n%s", err, f.out.String())
	}
	for comp := range f.ports {
		checkFile(t, filepath.Join(f.manifestDir, comp+".yaml"), f.new[comp])
		checkFile(t, filepath.Join(f.backupDir, comp+".yaml"), f.old[comp])
		if f.kubelet.started[comp] != 1 {
			t.Errorf("%s was started %d times, want once", comp, f.kubelet.started[comp])
		}
	}
	if got := strings.Join(sp.Changed(), ","); got != "kube-apiserver,kube-controller-manager" {
		t.Errorf("Changed() = %s", got)
	}
	if got := strings.Join(hooks, ","); got != "kube-apiserver,kube-controller-manager" {
		t.Errorf("Before hooks ran for %s", got)
	}
	if got, want := strings.Join(asked, " "), healthURL(6443)+" "+healthURL(10257); got != want {
		t.Errorf("health asked of %s, want %s", got, want)
	}
}

// TestStaticPodsApplyUnhealthyRollsBack: the controller manager never
// answers healthy on its new manifest; both manifests are put back.
func TestStaticPodsApplyUnhealthyRollsBack(t *testing.T) {
	f := newStaticPodsFixture(t)
	bad := filepath.Join(f.manifestDir, "kube-controller-manager.yaml")
	sp := f.staticPods(func(_ context.Context, url string) error {
		if url != healthURL(10257) {
			return nil
		}
		if b, _ := os.ReadFile(bad); bytes.Equal(b, f.new["kube-controller-manager"]) {
			return errors.New("HTTP 500: not ready")
		}
		return nil
	}, 150*time.Millisecond)
	err := sp.Apply(context.Background(), f.manifests(f.new))
	var ce *upgrade.ComponentError
	if !errors.As(err, &ce) {
		t.Fatalf("Apply = %v, want a *ComponentError", err)
	}
	if ce.Component != "kube-controller-manager" {
		t.Errorf("ComponentError names %q, want kube-controller-manager", ce.Component)
	}
	if ce.RollbackErr != nil {
		t.Errorf("the rollback failed: %v", ce.RollbackErr)
	}
	for _, w := range []string{"kube-controller-manager", "not up after", "HTTP 500", "previous manifests were restored"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	for comp := range f.ports {
		checkFile(t, filepath.Join(f.manifestDir, comp+".yaml"), f.old[comp])
		checkFile(t, filepath.Join(f.backupDir, comp+".yaml"), f.old[comp])
		// Started on the new manifest, then again on the restored one.
		if f.kubelet.started[comp] != 2 {
			t.Errorf("%s was started %d times, want twice", comp, f.kubelet.started[comp])
		}
	}
	if got := sp.Changed(); len(got) != 0 {
		t.Errorf("Changed() after the rollback = %v, want none", got)
	}
	out := f.out.String()
	if i, j := strings.Index(out, `Restoring the previous manifest of "kube-controller-manager"`), strings.Index(out, `Restoring the previous manifest of "kube-apiserver"`); i < 0 || j < i {
		t.Errorf("the manifests were not restored newest first:\n%s", out)
	}
}

func TestStaticPodsApplyCrashLoopFailsFast(t *testing.T) {
	f := newStaticPodsFixture(t)
	f.kubelet.crash = func(component string, manifest []byte) bool {
		return bytes.Equal(manifest, f.new[component])
	}
	const timeout = 10 * time.Second
	sp := f.staticPods(healthyAlways, timeout)
	start := time.Now()
	err := sp.Apply(context.Background(), f.manifests(f.new)[:1])
	if elapsed := time.Since(start); elapsed >= timeout/2 {
		t.Errorf("Apply took %v: the crash loop was waited out", elapsed)
	}
	var ce *upgrade.ComponentError
	if !errors.As(err, &ce) || ce.Component != "kube-apiserver" {
		t.Fatalf("Apply = %v, want a *ComponentError for kube-apiserver", err)
	}
	if !strings.Contains(err.Error(), "exited 3 times; read its logs with 'crictl logs kube-apiserver-node1-1-c'") {
		t.Errorf("error %q does not name the exits and the container", err)
	}
	if ce.RollbackErr != nil {
		t.Errorf("the rollback failed: %v", ce.RollbackErr)
	}
	checkFile(t, filepath.Join(f.manifestDir, "kube-apiserver.yaml"), f.old["kube-apiserver"])
}

func TestStaticPodsApplyBeforeHookFails(t *testing.T) {
	f := newStaticPodsFixture(t)
	sp := f.staticPods(healthyAlways, time.Second)
	hookErr := errors.New("renewing the certificates failed")
	ms := f.manifests(f.new)
	ms[0].Before = func() error { return hookErr }
	err := sp.Apply(context.Background(), ms)
	if !errors.Is(err, hookErr) {
		t.Fatalf("Apply = %v, want the hook's error", err)
	}
	var ce *upgrade.ComponentError
	if !errors.As(err, &ce) || ce.Component != "kube-apiserver" || ce.RollbackErr != nil {
		t.Errorf("Apply = %#v, want a *ComponentError for kube-apiserver with no rollback error", err)
	}
	for comp := range f.ports {
		if b, _ := os.ReadFile(filepath.Join(f.manifestDir, comp+".yaml")); !bytes.Equal(b, f.old[comp]) {
			t.Errorf("the manifest of %s was written:\n%s", comp, b)
		}
		if f.kubelet.started[comp] != 0 {
			t.Errorf("%s was restarted", comp)
		}
	}
	if got := sp.Changed(); len(got) != 0 {
		t.Errorf("Changed() = %v, want none", got)
	}
}

// TestStaticPodsApplyNoProbe: a manifest without an HTTP probe cannot be
// watched; the old one is put back. (The fake kubelet never looked at the
// probe-less manifest, so the wait for the restored Pod times out: the
// rollback error is not checked.)
func TestStaticPodsApplyNoProbe(t *testing.T) {
	f := newStaticPodsFixture(t)
	sp := f.staticPods(healthyAlways, 50*time.Millisecond)
	noProbe := []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-apiserver\nspec:\n  containers:\n  - name: kube-apiserver\n    image: registry.k8s.io/kube-apiserver:v1.36.3\n")
	err := sp.Apply(context.Background(), []upgrade.Manifest{{Component: "kube-apiserver", Data: noProbe}})
	if err == nil || !strings.Contains(err.Error(), "no HTTP probe") {
		t.Fatalf("Apply = %v, want an error about the missing probe", err)
	}
	checkFile(t, filepath.Join(f.manifestDir, "kube-apiserver.yaml"), f.old["kube-apiserver"])
}

func TestBackupDirName(t *testing.T) {
	at := time.Date(2026, 5, 1, 9, 8, 7, 0, time.UTC)
	if got, want := upgrade.BackupDirName("/etc/kubernetes/tmp", "etcd", at), "/etc/kubernetes/tmp/kubeadm-backup-etcd-2026-05-01-09-08-07"; got != want {
		t.Errorf("BackupDirName = %s, want %s", got, want)
	}
}

// TestStaticPodsApplyWaitsForAPIServerAfterEtcd: once etcd is replaced,
// the API server (which lost its etcd meanwhile) must serve again before
// its own manifest is written, so that the two restarts do not make one
// outage; a node without an API server manifest goes on at once.
func TestStaticPodsApplyWaitsForAPIServerAfterEtcd(t *testing.T) {
	f := newStaticPodsFixture(t)
	const etcdPort = 2381
	f.old["etcd"] = podManifest("etcd", "3.6.8-0", etcdPort)
	f.new["etcd"] = podManifest("etcd", "3.7.0-0", etcdPort)
	if err := os.WriteFile(filepath.Join(f.manifestDir, "etcd.yaml"), f.old["etcd"], 0o600); err != nil {
		t.Fatal(err)
	}
	f.kubelet.running("etcd", f.old["etcd"])
	apiserver := filepath.Join(f.manifestDir, "kube-apiserver.yaml")
	unanswered := 3 // the API server's first answers after etcd's replacement fail
	var asked []string
	sp := f.staticPods(func(_ context.Context, url string) error {
		asked = append(asked, url)
		if url != healthURL(6443) {
			return nil
		}
		if b, _ := os.ReadFile(apiserver); bytes.Equal(b, f.old["kube-apiserver"]) && unanswered > 0 {
			unanswered--
			return errors.New("HTTP 500: [-]etcd failed")
		}
		return nil
	}, 5*time.Second)
	ms := append([]upgrade.Manifest{{Component: "etcd", Data: f.new["etcd"]}}, f.manifests(f.new)...)
	ms[1].Before = func() error {
		if unanswered > 0 {
			t.Errorf("the API server's upgrade began before it served again after etcd's (%d answers to go)", unanswered)
		}
		return nil
	}
	if err := sp.Apply(context.Background(), ms); err != nil {
		t.Fatalf("Apply: %v\n%s", err, f.out.String())
	}
	want := []string{healthURL(etcdPort), healthURL(6443), healthURL(6443), healthURL(6443), healthURL(6443), healthURL(6443), healthURL(10257)}
	if !slices.Equal(asked, want) {
		t.Errorf("health asked of\n%v\nwant\n%v", asked, want)
	}
	if !strings.Contains(f.out.String(), "API server serves again") {
		t.Errorf("the output does not say the API server was waited for:\n%s", f.out.String())
	}

	// etcd alone, on a node whose API server manifest is gone: no wait.
	if err := os.Remove(apiserver); err != nil {
		t.Fatal(err)
	}
	f.old["etcd"], f.new["etcd"] = f.new["etcd"], podManifest("etcd", "3.7.1-0", etcdPort)
	asked = nil
	sp = f.staticPods(func(_ context.Context, url string) error { asked = append(asked, url); return nil }, time.Second)
	if err := sp.Apply(context.Background(), []upgrade.Manifest{{Component: "etcd", Data: f.new["etcd"]}}); err != nil {
		t.Fatalf("Apply without an API server: %v", err)
	}
	if !slices.Equal(asked, []string{healthURL(etcdPort)}) {
		t.Errorf("health asked of %v without an API server, want etcd's only", asked)
	}
}

// TestStaticPodsRollbackEtcdData: when the API server fails after etcd
// upgraded fine, etcd's data goes back if etcd is its cluster's only
// member, after the kubelet stopped etcd (its manifest removed) and
// before the previous manifest starts it again; a member with peers keeps
// its data.
func TestStaticPodsRollbackEtcdData(t *testing.T) {
	for _, tc := range []struct {
		members  int
		want     string
		noLeader bool // the Leases keep the restored holder
	}{{1, "old", false}, {3, "new", false}, {1, "old", true}} {
		t.Run(fmt.Sprintf("%d members, no leader %v", tc.members, tc.noLeader), func(t *testing.T) {
			f := newStaticPodsFixture(t)
			const etcdPort = 2381
			f.old["etcd"] = podManifest("etcd", "3.6.8-0", etcdPort)
			f.new["etcd"] = podManifest("etcd", "3.7.0-0", etcdPort)
			etcdManifest := filepath.Join(f.manifestDir, "etcd.yaml")
			if err := os.WriteFile(etcdManifest, f.old["etcd"], 0o600); err != nil {
				t.Fatal(err)
			}
			f.kubelet.running("etcd", f.old["etcd"])
			apiserver := filepath.Join(f.manifestDir, "kube-apiserver.yaml")
			sp := f.staticPods(func(_ context.Context, url string) error {
				if b, _ := os.ReadFile(apiserver); url == healthURL(6443) && bytes.Equal(b, f.new["kube-apiserver"]) {
					return errors.New("HTTP 500: not ready")
				}
				return nil
			}, 200*time.Millisecond)
			sp.EtcdData = upgrade.EtcdDataFixture(t, tc.members)
			sp.EtcdData.Out = &f.out
			restored := false
			sp.EtcdData.Chown = func() error {
				restored = true
				if f.kubelet.runs("etcd") {
					t.Error("etcd's data was put back while its Pod runs")
				}
				if _, err := os.Stat(etcdManifest); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("etcd's data was put back with a manifest in place (%v)", err)
				}
				return nil
			}
			// After a restore, the rollback waits for the controller
			// manager and the scheduler to lead again.
			reads := 0
			c := leasetest.Client(func(name string) (runtime.Object, error) {
				reads++
				renewed := time.Now()
				if tc.noLeader {
					renewed = renewed.Add(-time.Minute)
				}
				return leasetest.Lease(name, "node1_x", renewed), nil
			})
			sp.Leaders = &leaderlease.Waiter{Client: c, Timeout: 50 * time.Millisecond, Interval: 5 * time.Millisecond, Out: &f.out}
			ms := append([]upgrade.Manifest{{Component: "etcd", Data: f.new["etcd"]}}, f.manifests(f.new)...)
			err := sp.Apply(context.Background(), ms)
			var ce *upgrade.ComponentError
			if tc.noLeader {
				if !errors.As(err, &ce) || ce.RollbackErr == nil || !strings.Contains(ce.RollbackErr.Error(), "kube-controller-manager does not lead: not within 50ms") {
					t.Fatalf("Apply = %v, want a rollback that names the controller manager not leading", err)
				}
			} else if !errors.As(err, &ce) || ce.Component != "kube-apiserver" || ce.RollbackErr != nil {
				t.Fatalf("Apply = %v, want a *ComponentError for kube-apiserver and a rollback that worked\n%s", err, f.out.String())
			}
			if wantReads := tc.want == "old"; (reads > 0) != wantReads {
				t.Errorf("%d reads of the Leases, want some: %v", reads, wantReads)
			}
			if got := upgrade.EtcdDataOf(sp.EtcdData.DataDir); got != tc.want {
				t.Errorf("etcd's data is %q after the rollback, want %q", got, tc.want)
			}
			if restored != (tc.want == "old") {
				t.Errorf("data put back: %v, want %v", restored, tc.want == "old")
			}
			checkFile(t, etcdManifest, f.old["etcd"])
			checkFile(t, apiserver, f.old["kube-apiserver"])
			if !f.kubelet.runs("etcd") {
				t.Error("etcd does not run after the rollback")
			}
		})
	}
}
