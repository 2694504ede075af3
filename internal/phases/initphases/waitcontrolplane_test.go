package initphases

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

const waitTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
timeouts:
  kubeletHealthCheck: 10s
  controlPlaneComponentHealthCheck: 20s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

// fakeClock moves forward only when waited on, so timeouts pass at once.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- now
	return ch
}

// healthServer answers 200 once it has answered failures errors first, and
// counts the requests.
type healthServer struct {
	failures int32
	calls    atomic.Int32
}

func (s *healthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := s.calls.Add(1); n <= s.failures {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "ok")
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(u.Host)
	var port int
	fmt.Sscan(p, &port)
	return port
}

// writeManifest writes a static Pod manifest whose command holds flags.
func writeManifest(t *testing.T, dir, component string, flags ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: kube-system\nspec:\n  containers:\n  - name: %s\n    command:\n    - %s\n", component, component, component)
	for _, f := range flags {
		fmt.Fprintf(&b, "    - %s\n", f)
	}
	if err := os.WriteFile(staticpod.ManifestPath(dir, component), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

type waitFixture struct {
	d                            *Data
	out                          *bytes.Buffer
	kubelet, kcm, scheduler      *healthServer
	kubeletURL, kcmURL, schedURL string
	apiCalls                     atomic.Int32
	apiErr                       error
}

// newWaitFixture runs a fake kubelet, controller manager and scheduler and
// writes manifests pointing at them; the API server check is a function.
func newWaitFixture(t *testing.T) *waitFixture {
	t.Helper()
	f := &waitFixture{kubelet: &healthServer{}, kcm: &healthServer{}, scheduler: &healthServer{}, out: &bytes.Buffer{}}
	kubelet := httptest.NewServer(f.kubelet)
	kcm := httptest.NewTLSServer(f.kcm)
	sched := httptest.NewTLSServer(f.scheduler)
	t.Cleanup(func() { kubelet.Close(); kcm.Close(); sched.Close() })

	cfg := configtest.InitConfiguration(t, waitTestConfig, "10.0.0.5")
	port := int32(serverPort(t, kubelet))
	cfg.ComponentConfigs.Kubelet.HealthzPort = &port
	dir := t.TempDir()
	writeManifest(t, dir, staticpod.KubeAPIServer, "--advertise-address=10.0.0.5", "--secure-port=6443", "--authorization-mode=Node,RBAC")
	writeManifest(t, dir, staticpod.KubeControllerManager, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", serverPort(t, kcm)))
	writeManifest(t, dir, staticpod.KubeScheduler, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", serverPort(t, sched)))
	f.kubeletURL = kubelet.URL + "/healthz"
	f.kcmURL = kcm.URL + "/healthz"
	f.schedURL = sched.URL + "/livez"
	f.d = &Data{Cfg: cfg, ManifestDir: dir, Out: f.out}
	return f
}

func (f *waitFixture) checks(clock *fakeClock) HealthChecks {
	return HealthChecks{
		Clock:    clock,
		Interval: time.Second,
		APIServer: func(context.Context, *Data) error {
			f.apiCalls.Add(1)
			return f.apiErr
		},
	}
}

func TestWaitForControlPlaneHealthy(t *testing.T) {
	f := newWaitFixture(t)
	f.kcm.failures = 3 // starts slowly
	clock := &fakeClock{now: time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)}
	if err := WaitForControlPlane(context.Background(), f.d, f.checks(clock)); err != nil {
		t.Fatalf("WaitForControlPlane: %v\n%s", err, f.out)
	}
	out := f.out.String()
	for _, want := range []string{
		fmt.Sprintf("[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory %q\n", f.d.ManifestDir),
		"[kubelet-check] Waiting for a healthy kubelet at " + f.kubeletURL + ". This can take up to 10s\n",
		"[kubelet-check] The kubelet is healthy after 0s\n",
		"[control-plane-check] Waiting for healthy control plane components. This can take up to 20s\n",
		"[control-plane-check] Checking kube-apiserver at https://10.0.0.5:6443/livez\n",
		"[control-plane-check] Checking kube-controller-manager at " + f.kcmURL + "\n",
		"[control-plane-check] Checking kube-scheduler at " + f.schedURL + "\n",
		"[control-plane-check] kube-apiserver is healthy after",
		"[control-plane-check] kube-controller-manager is healthy after",
		"[control-plane-check] kube-scheduler is healthy after",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := f.kcm.calls.Load(); got != 4 {
		t.Errorf("controller manager asked %d times, want 4 (3 failures, then healthy)", got)
	}
	if f.apiCalls.Load() != 1 || f.kubelet.calls.Load() != 1 || f.scheduler.calls.Load() != 1 {
		t.Errorf("calls: api %d, kubelet %d, scheduler %d; want 1 each", f.apiCalls.Load(), f.kubelet.calls.Load(), f.scheduler.calls.Load())
	}
}

func TestWaitForControlPlaneFailures(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(t *testing.T, f *waitFixture)
		skip       bool
		wantErr    []string
		wantOut    []string
		notOut     []string
		maxKubelet int32
	}{
		{
			name: "kubelet not running",
			setup: func(t *testing.T, f *waitFixture) {
				p := int32(closedPort(t))
				f.d.Cfg.ComponentConfigs.Kubelet.HealthzPort = &p
				f.kubeletURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", p)
			},
			wantErr: []string{"waiting for the kubelet to become healthy at http://127.0.0.1:", "connection refused"},
			wantOut: []string{"[kubelet-check] The kubelet is not healthy after 10s\n", "'systemctl status kubelet'", "'journalctl -xeu kubelet'"},
			notOut:  []string{"[control-plane-check]"},
		},
		{
			name:       "kubelet unhealthy",
			setup:      func(t *testing.T, f *waitFixture) { f.kubelet.failures = 1000 },
			wantErr:    []string{"HTTP 500: not yet"},
			wantOut:    []string{"[kubelet-check] The kubelet is not healthy after 10s\n"},
			maxKubelet: 11, // one attempt a second for 10s, plus the first
		},
		{
			name: "controller manager on a wrong port",
			setup: func(t *testing.T, f *waitFixture) {
				port := closedPort(t)
				writeManifest(t, f.d.ManifestDir, staticpod.KubeControllerManager, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port))
			},
			wantErr: []string{"waiting for the control plane to become healthy: kube-controller-manager at https://127.0.0.1:", "/healthz: ", "connection refused"},
			wantOut: []string{
				"[control-plane-check] kube-controller-manager is not healthy after 20s\n",
				"[control-plane-check] kube-scheduler is healthy after",
				"'crictl --runtime-endpoint unix:///run/containerd/containerd.sock ps -a | grep kube | grep -v pause'",
				"'crictl --runtime-endpoint unix:///run/containerd/containerd.sock logs CONTAINERID'",
			},
		},
		{
			name: "API server and scheduler down",
			setup: func(t *testing.T, f *waitFixture) {
				f.apiErr = errors.New("connection refused")
				f.scheduler.failures = 1000
			},
			skip:    true,
			wantErr: []string{"kube-apiserver at https://10.0.0.5:6443/livez: connection refused", "kube-scheduler at https://127.0.0.1:"},
			// Two pollers advance the one fake clock, so how long each
			// waited depends on how their goroutines interleave.
			wantOut: []string{"kube-apiserver is not healthy after ", "kube-scheduler is not healthy after ", "kube-controller-manager is healthy after"},
			notOut:  []string{"[kubelet-check]"},
		},
		{
			name: "missing manifest",
			setup: func(t *testing.T, f *waitFixture) {
				os.Remove(staticpod.ManifestPath(f.d.ManifestDir, staticpod.KubeScheduler))
			},
			wantErr: []string{"finding the control-plane components to check: reading the static Pod manifest: open ", "kube-scheduler.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWaitFixture(t)
			tt.setup(t, f)
			clock := &fakeClock{now: time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)}
			h := f.checks(clock)
			h.SkipKubelet = tt.skip
			err := WaitForControlPlane(context.Background(), f.d, h)
			t.Logf("%s\nerror: %v", f.out, err)
			if err == nil {
				t.Fatalf("WaitForControlPlane succeeded:\n%s", f.out)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			out := f.out.String()
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, not := range tt.notOut {
				if strings.Contains(out, not) {
					t.Errorf("output has %q:\n%s", not, out)
				}
			}
			if tt.maxKubelet > 0 && f.kubelet.calls.Load() > tt.maxKubelet {
				t.Errorf("kubelet asked %d times, want at most %d", f.kubelet.calls.Load(), tt.maxKubelet)
			}
		})
	}
}

func TestWaitForControlPlaneEndpointsFromManifests(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, staticpod.KubeAPIServer, "--advertise-address=fd00::5", "--secure-port=7443")
	writeManifest(t, dir, staticpod.KubeControllerManager, "--bind-address=0.0.0.0")
	writeManifest(t, dir, staticpod.KubeScheduler, "--secure-port=11259", "--bind-address=::1")
	cfg := configtest.InitConfiguration(t, waitTestConfig, "10.0.0.5")
	w := newHealthWaiter(&Data{Cfg: cfg, ManifestDir: dir, Out: &bytes.Buffer{}}, HealthChecks{})
	comps, err := w.components()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		staticpod.KubeAPIServer:         "https://[fd00::5]:7443/livez",
		staticpod.KubeControllerManager: "https://0.0.0.0:10257/healthz",
		staticpod.KubeScheduler:         "https://[::1]:11259/livez",
	}
	for _, c := range comps {
		if c.url != want[c.name] {
			t.Errorf("%s: %s, want %s", c.name, c.url, want[c.name])
		}
	}

	// Without the flags: the configuration's endpoint and the defaults.
	for _, c := range staticpod.ControlPlaneComponents() {
		writeManifest(t, dir, c)
	}
	if comps, err = w.components(); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		staticpod.KubeAPIServer:         "https://10.0.0.5:6443/livez",
		staticpod.KubeControllerManager: "https://127.0.0.1:10257/healthz",
		staticpod.KubeScheduler:         "https://127.0.0.1:10259/livez",
	}
	for _, c := range comps {
		if c.url != want[c.name] {
			t.Errorf("%s: %s, want %s", c.name, c.url, want[c.name])
		}
	}
	if got := w.kubeletURL(); got != "http://127.0.0.1:10248/healthz" {
		t.Errorf("kubelet URL %s", got)
	}
}

func TestWaitForControlPlaneDryRun(t *testing.T) {
	f := newWaitFixture(t)
	f.d.DryRun = true
	if err := WaitForControlPlane(context.Background(), f.d, f.checks(&fakeClock{})); err != nil {
		t.Fatal(err)
	}
	if f.kubelet.calls.Load()+f.kcm.calls.Load()+f.scheduler.calls.Load()+f.apiCalls.Load() != 0 {
		t.Error("a dry run asked an endpoint")
	}
	if !strings.HasPrefix(f.out.String(), "[dryrun] Would wait") {
		t.Errorf("output: %s", f.out)
	}
}

func TestWaitForControlPlaneDefaultTimeouts(t *testing.T) {
	cfg := configtest.InitConfiguration(t, waitTestConfig, "10.0.0.5")
	cfg.Timeouts = nil
	w := newHealthWaiter(&Data{Cfg: cfg}, HealthChecks{})
	if k, c := w.timeouts(); k != 4*time.Minute || c != 4*time.Minute {
		t.Errorf("timeouts %v, %v; want 4m0s each", k, c)
	}
	cfg.Timeouts = &kubeadm.Timeouts{KubeletHealthCheck: &metav1.Duration{Duration: time.Second}}
	if k, c := w.timeouts(); k != time.Second || c != 4*time.Minute {
		t.Errorf("timeouts %v, %v; want 1s and 4m0s", k, c)
	}
}

func TestWaitControlPlanePhaseCancelled(t *testing.T) {
	f := newWaitFixture(t)
	f.kubelet.failures = 1000
	ctx, cancel := context.WithCancel(context.Background())
	h := HealthChecks{Interval: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- WaitControlPlanePhaseWith(h).Run(ctx, f.d) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wait did not end when its context was cancelled")
	}
}

// The API server check asks this node's API server, at the address of its
// manifest, with admin.conf's CA and credentials, not the server admin.conf
// names (a load balancer, or another node's API server when joining).
func TestAPIServerCheckAsksThisNode(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			http.NotFound(w, r)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeManifest(t, dir, staticpod.KubeAPIServer, "--advertise-address="+host, "--secure-port="+port)
	writeManifest(t, dir, staticpod.KubeControllerManager)
	writeManifest(t, dir, staticpod.KubeScheduler)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	admin := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://192.0.2.1:1
    certificate-authority-data: %s
users:
- name: u
  user:
    token: admin-token
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, base64.StdEncoding.EncodeToString(ca))
	if err := os.WriteFile(filepath.Join(dir, "admin.conf"), []byte(admin), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := configtest.InitConfiguration(t, waitTestConfig, "10.0.0.5")
	w := newHealthWaiter(&Data{Cfg: cfg, ManifestDir: dir, KubeconfigDir: dir, Out: &bytes.Buffer{}}, HealthChecks{})
	comps, err := w.components()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comps {
		if c.name != staticpod.KubeAPIServer {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.check(ctx); err != nil {
			t.Fatalf("check of %s: %v", c.url, err)
		}
		if got, _ := auth.Load().(string); got != "Bearer admin-token" {
			t.Errorf("the API server was asked with Authorization %q, want admin.conf's token", got)
		}
		return
	}
	t.Fatal("no kube-apiserver component")
}
