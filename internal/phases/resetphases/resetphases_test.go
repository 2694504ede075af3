package resetphases

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/cri/critest"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubelet/kubelettest"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
)

// testNode lays out a node's files under a temporary root and returns Data
// for resetting it.
func testNode(t *testing.T) (*Data, string) {
	t.Helper()
	root := t.TempDir()
	k := filepath.Join(root, "etc/kubernetes")
	for _, p := range []string{
		"etc/kubernetes/manifests/kube-apiserver.yaml", "etc/kubernetes/pki/ca.crt", "etc/kubernetes/pki/etcd/ca.key",
		"etc/kubernetes/admin.conf", "etc/kubernetes/kubelet.conf", "etc/kubernetes/tmp/x",
		"var/lib/kubelet/config.yaml", "var/lib/kubelet/pki/kubelet-client-current.pem",
		"etc/kubernetes/keep-me.txt",
		"etc/systemd/system/kubeadm-certs-renewal.service", "etc/systemd/system/kubeadm-certs-renewal.timer",
		"var/lib/kubeadm/certs-renewal.json",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d := &Data{
		Cfg:           &kubeadm.ResetConfiguration{},
		KubernetesDir: k,
		ManifestDir:   filepath.Join(k, "manifests"),
		KubeletDir:    filepath.Join(root, "var/lib/kubelet"),
		CertDir:       filepath.Join(k, "pki"),
		EtcDir:        filepath.Join(root, "etc"),
		SystemRoot:    root,
		Force:         true,
		Out:           &bytes.Buffer{},
		Service:       &kubelettest.SystemdHost{},
		Mounts: func() ([]string, error) {
			kl := filepath.Join(root, "var/lib/kubelet")
			return []string{"/", kl, kl + "/pods/a/volumes/x", kl + "-other", kl + "/pods/a"}, nil
		},
		Unmount: func(string, int) error { return nil },
	}
	return d, root
}

func TestCleanupNodeRemovesWhatKubeadmMade(t *testing.T) {
	d, root := testNode(t)
	var unmounted []string
	d.Unmount = func(p string, flags int) error {
		unmounted = append(unmounted, p)
		if flags != unix.MNT_DETACH {
			t.Errorf("unmount flags %d, want MNT_DETACH", flags)
		}
		return nil
	}
	d.Cfg.UnmountFlags = []string{"MNT_DETACH"}
	for i := 0; i < 2; i++ { // a second run finds nothing left and succeeds
		if err := runCleanupNode(context.Background(), d); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	var left []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	want := "etc/kubernetes/keep-me.txt,etc/kubernetes/tmp/x"
	if got := strings.Join(left, ","); got != want {
		t.Errorf("left %s, want %s", got, want)
	}
	kl := filepath.Join(root, "var/lib/kubelet")
	wantUnmounted := []string{kl + "/pods/a/volumes/x", kl + "/pods/a"}
	if strings.Join(unmounted[:2], ",") != strings.Join(wantUnmounted, ",") || len(unmounted) != 4 {
		t.Errorf("unmounted %v, want deepest first %v", unmounted, wantUnmounted)
	}
	if calls := d.Service.(*kubelettest.SystemdHost).Calls; len(calls) == 0 || calls[0] != "systemctl stop kubelet" {
		t.Errorf("service calls %v, want the kubelet stopped", calls)
	}
	// The renewal timer is disabled once, by the run that found it.
	if calls := strings.Join(d.Service.(*kubelettest.SystemdHost).Calls, ","); strings.Count(calls, "systemctl disable --now kubeadm-certs-renewal.timer") != 1 {
		t.Errorf("service calls %v, want the renewal timer disabled once", calls)
	}
	if !strings.Contains(d.Out.(*bytes.Buffer).String(), "--cleanup-network") {
		t.Errorf("the leftovers were not explained")
	}
}

func TestCleanupNodeRemovesRootlessAccounts(t *testing.T) {
	d, _ := testNode(t)
	etc := d.EtcDir
	for name, content := range map[string]string{"passwd": "root:x:0:0:root:/root:/bin/bash\n", "group": "root:x:0:\n"} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rootless.Ensure(etc); err != nil {
		t.Fatal(err)
	}
	d.DryRun = true
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Out.(*bytes.Buffer).String(), "[dryrun] Would remove the users and groups of the rootless control plane") {
		t.Errorf("dry run output: %s", d.Out)
	}
	if ok, _ := rootless.Present(etc); !ok {
		t.Fatal("the dry run removed the accounts")
	}
	d.DryRun = false
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(etc, "passwd")); string(b) != "root:x:0:0:root:/root:/bin/bash\n" {
		t.Errorf("passwd after reset: %q", b)
	}
}

func TestCleanupTmpDir(t *testing.T) {
	d, root := testNode(t)
	d.Cfg.CleanupTmpDir = true
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/kubernetes/tmp/x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tmp folder not emptied: %v", err)
	}
}

func TestCleanupNodeRemovesPods(t *testing.T) {
	d, _ := testNode(t)
	srv := &critest.Server{Sandboxes: []*criv1.PodSandbox{
		{Id: "p1", Metadata: &criv1.PodSandboxMetadata{Name: "etcd-cp", Namespace: "kube-system"}, State: criv1.PodSandboxState_SANDBOX_READY},
		{Id: "p2", Metadata: &criv1.PodSandboxMetadata{Name: "web", Namespace: "default"}, State: criv1.PodSandboxState_SANDBOX_NOTREADY},
	}}
	d.Cfg.CRISocket = critest.Start(t, srv)
	d.DialCRI = func(ctx context.Context, endpoint string) (cri.Runtime, error) {
		return cri.Dial(ctx, endpoint, cri.Options{})
	}
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	calls := strings.Join(srv.Calls(), ",")
	for _, want := range []string{"StopPodSandbox p1", "RemovePodSandbox p1", "StopPodSandbox p2", "RemovePodSandbox p2"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no %s in %s", want, calls)
		}
	}
}

func TestCleanupNodeTriesPodsAgain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int
		wantWarn bool
	}{
		{name: "a stop refused twice", failures: 2},
		{name: "a stop always refused", failures: podRemovalRounds, wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := testNode(t)
			var out bytes.Buffer
			d.Out = &out
			srv := &critest.Server{
				Sandboxes: []*criv1.PodSandbox{
					{Id: "p1", Metadata: &criv1.PodSandboxMetadata{Name: "etcd-cp", Namespace: "kube-system"}, State: criv1.PodSandboxState_SANDBOX_READY},
					{Id: "p2", Metadata: &criv1.PodSandboxMetadata{Name: "web", Namespace: "default"}, State: criv1.PodSandboxState_SANDBOX_READY},
				},
				StopFailures: map[string]int{"p2": tc.failures},
			}
			d.Cfg.CRISocket = critest.Start(t, srv)
			d.DialCRI = func(ctx context.Context, endpoint string) (cri.Runtime, error) {
				return cri.Dial(ctx, endpoint, cri.Options{})
			}
			if err := runCleanupNode(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			stops := 0
			for _, c := range srv.Calls() {
				if c == "StopPodSandbox p2" {
					stops++
				}
			}
			wantStops := min(tc.failures+1, podRemovalRounds)
			if stops != wantStops {
				t.Errorf("p2 stopped %d times, want %d", stops, wantStops)
			}
			warned := strings.Contains(out.String(), "WARNING: the containers could not be removed: stopping pod default/web")
			if warned != tc.wantWarn {
				t.Errorf("warning printed: %v, want %v\n%s", warned, tc.wantWarn, out.String())
			}
		})
	}
}

func TestPreflightConfirmation(t *testing.T) {
	cases := []struct {
		name       string
		yes        bool
		force      bool
		dryRun     bool
		wantErr    string
		wantPrompt bool
	}{
		{name: "answered no", wantErr: "--force", wantPrompt: true},
		{name: "answered yes", yes: true, wantPrompt: true},
		{name: "forced", force: true},
		{name: "dry run", dryRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			prompted := false
			d := &Data{
				Force: tc.force, DryRun: tc.dryRun, Out: &out,
				Confirm: func(q string) bool {
					prompted = true
					if !strings.Contains(q, "[y/N]") {
						t.Errorf("question %q", q)
					}
					return tc.yes
				},
				Host: rootHost{},
			}
			err := runPreflight(context.Background(), d)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if prompted != tc.wantPrompt {
				t.Errorf("prompted: %v, want %v", prompted, tc.wantPrompt)
			}
			// Upstream warns only when it asks.
			if warned := strings.Contains(out.String(), "WARNING"); warned != tc.wantPrompt {
				t.Errorf("warning printed: %v, want %v (output %q)", warned, tc.wantPrompt, out.String())
			}
		})
	}
}

func TestWithoutKubeChains(t *testing.T) {
	saved := `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:DOCKER - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -j KUBE-POSTROUTING
-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE
-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-X
-A DOCKER -i docker0 -j RETURN
COMMIT
`
	got, changed := withoutKubeChains([]byte(saved))
	want := `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:DOCKER - [0:0]
-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE
-A DOCKER -i docker0 -j RETURN
COMMIT
`
	if !changed || string(got) != want {
		t.Errorf("changed=%v, got:\n%s\nwant:\n%s", changed, got, want)
	}
	if _, changed := withoutKubeChains([]byte(want)); changed {
		t.Errorf("rules without KUBE- chains were changed")
	}
}

func TestReadLocalEtcd(t *testing.T) {
	dir := t.TempDir()
	d := &Data{ManifestDir: dir, SystemRoot: t.TempDir()}
	if e, err := readLocalEtcd(d); e != nil || err != nil {
		t.Fatalf("no manifest: %v, %v", e, err)
	}
	manifest := `apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system}
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --name=cp-2
    - --data-dir=/var/lib/etcd2
    - --initial-advertise-peer-urls=https://10.0.0.2:2380
    - --advertise-client-urls=https://10.0.0.2:2379
`
	if err := os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := readLocalEtcd(d)
	if err != nil {
		t.Fatal(err)
	}
	if e.name != "cp-2" || e.dataDir != "/var/lib/etcd2" || e.peerURL != "https://10.0.0.2:2380" || len(e.clientURLs) != 1 {
		t.Errorf("read %+v", e)
	}
}

// Without a manifest, the etcd unit of a control plane of host processes
// tells the member; a unit kubeadm did not write is not read.
func TestReadLocalEtcdFromTheUnit(t *testing.T) {
	d := &Data{ManifestDir: t.TempDir(), SystemRoot: t.TempDir()}
	unit := hostprocess.UnitPath(d.SystemRoot, hostprocess.Etcd)
	if err := os.MkdirAll(filepath.Dir(unit), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/usr/bin/etcd --data-dir=/srv/etcd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, err := readLocalEtcd(d); e != nil || err != nil {
		t.Fatalf("foreign unit: %v, %v", e, err)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"etcd", "--name=cp", "--data-dir=/var/lib/etcd3", "--initial-advertise-peer-urls=https://10.0.0.2:2380"}}}}}
	data, err := hostprocess.Unit(hostprocess.Etcd, pod, "/usr/bin/etcd")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := readLocalEtcd(d)
	if err != nil || e == nil {
		t.Fatalf("%v, %v", e, err)
	}
	if e.name != "cp" || e.dataDir != "/var/lib/etcd3" || e.peerURL != "https://10.0.0.2:2380" {
		t.Errorf("read %+v", e)
	}
}

// cleanup-node stops, disables and deletes kubeadm's units, the scheduler
// first and etcd last, before the kubelet; other units stay.
func TestCleanupNodeRemovesUnits(t *testing.T) {
	d, root := testNode(t)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"x"}}}}}
	for _, c := range hostprocess.Components() {
		data, err := hostprocess.Unit(c, pod, "/usr/bin/"+c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hostprocess.UnitPath(root, c), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(root, "etc/systemd/system/containerd.service")
	if err := os.WriteFile(other, []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	calls := strings.Join(d.Service.(*kubelettest.SystemdHost).Calls, ",")
	want := "systemctl stop kube-scheduler.service,systemctl disable kube-scheduler.service," +
		"systemctl stop kube-controller-manager.service,systemctl disable kube-controller-manager.service," +
		"systemctl stop kube-apiserver.service,systemctl disable kube-apiserver.service," +
		"systemctl stop etcd.service,systemctl disable etcd.service,systemctl daemon-reload,systemctl stop kubelet"
	if !strings.HasPrefix(calls, want) {
		t.Errorf("calls\n%s\nwant first\n%s", calls, want)
	}
	for _, c := range hostprocess.Components() {
		if _, err := os.Stat(hostprocess.UnitPath(root, c)); err == nil {
			t.Errorf("the unit of %s is left", c)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another unit was removed: %v", err)
	}
}

// An etcd the kubelet restarts between the two phases writes its files
// into the emptied folder again; cleanup-node removes them once its pods
// are gone.
func TestCleanupNodeEmptiesTheEtcdFolderAgain(t *testing.T) {
	d, root := testNode(t)
	dataDir := filepath.Join(root, "var/lib/etcd")
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: kube-system}\nspec:\n  containers:\n  - name: etcd\n    command:\n    - etcd\n    - --name=cp\n" +
		"    - --data-dir=" + dataDir + "\n    - --initial-advertise-peer-urls=https://127.0.0.1:1\n    - --advertise-client-urls=https://127.0.0.1:1\n"
	if err := os.WriteFile(filepath.Join(d.ManifestDir, "etcd.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dataDir, "member/snap/db")
	restartedEtcd := func() {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	restartedEtcd()
	if err := runRemoveEtcdMember(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "member")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove-etcd-member left the data: %v", err)
	}
	restartedEtcd()
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Errorf("etcd folder after cleanup-node: %v, %v", entries, err)
	}
}

func TestUnescapeMountPath(t *testing.T) {
	if got := unescapeMountPath(`/var/lib/kubelet/pods/a\040b/vol`); got != "/var/lib/kubelet/pods/a b/vol" {
		t.Errorf("got %q", got)
	}
	if got := unescapeMountPath(`/trailing\04`); got != `/trailing\04` {
		t.Errorf("got %q", got)
	}
}

// rootHost is a preflight host where kubeadm runs as root.
type rootHost struct{ preflight.Host }

func (rootHost) EffectiveUID() int { return 0 }

// TestAnyListens: a listening port answers, a closed one does not, and a
// URL without a host is passed over.
func TestAnyListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := "https://" + ln.Addr().String()
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + ln2.Addr().String()
	ln2.Close()
	defer ln.Close()
	ctx := context.Background()
	if !anyListens(ctx, []string{"no host", closed, open}, time.Second) {
		t.Error("a listening endpoint was not found")
	}
	start := time.Now()
	if anyListens(ctx, []string{closed}, time.Second) {
		t.Error("a closed port answered")
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Logf("a refused connection took %v", took) // a refusal is immediate; only report
	}
}

// TestCleanupNodeDryRunKeepsRenewal: a dry run names the renewal's files
// and leaves them, with the timer enabled.
func TestCleanupNodeDryRunKeepsRenewal(t *testing.T) {
	d, root := testNode(t)
	d.DryRun = true
	if err := runCleanupNode(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	want := "[dryrun] Would disable and delete the automatic certificate renewal [/etc/systemd/system/kubeadm-certs-renewal.service /etc/systemd/system/kubeadm-certs-renewal.timer]"
	if !strings.Contains(d.Out.(*bytes.Buffer).String(), want) {
		t.Errorf("output:\n%s\nwant %q", d.Out, want)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/kubeadm-certs-renewal.timer")); err != nil {
		t.Error(err)
	}
	if calls := d.Service.(*kubelettest.SystemdHost).Calls; len(calls) != 0 {
		t.Errorf("service calls %v", calls)
	}
}
