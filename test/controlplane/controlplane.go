package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

const (
	// KubernetesVersion is the release of the upstream components run, and
	// the kubernetesVersion of the default configuration.
	KubernetesVersion = "v1.37.2"
	// EtcdVersion is the etcd release run: the one of the etcd image
	// kubeadm v1.37.2 lists (registry.k8s.io/etcd:3.7.0-0).
	EtcdVersion = "v3.7.0"
	// DefaultAdvertiseAddress is the API server's address when Options
	// leave it unset. It exists only inside the control plane's network
	// namespace.
	DefaultAdvertiseAddress = "10.199.0.2"
	// DefaultNodeName is the node name of the default configuration.
	DefaultNodeName = "fast-tier-cp"
	// IntegrationEnv, set to 1, turns a missing prerequisite into a failure
	// instead of a skip.
	IntegrationEnv = "KUBEADM_INTEGRATION"
	// configPath is where the kubeadm configuration is written, inside the
	// root folder.
	configPath = "/kubeadm.yaml"
	// stopGrace is how long a component may take to end after SIGTERM.
	stopGrace = 20 * time.Second
)

// offlinePhases are the kubeadm invocations that write a control-plane node.
var offlinePhases = [][]string{
	{"init", "phase", "certs", "all"},
	{"init", "phase", "kubeconfig", "all"},
	{"init", "phase", "etcd", "local"},
	{"init", "phase", "control-plane", "all"},
}

// Options tune Start. The zero value is a single control-plane node with
// the default configuration.
type Options struct {
	// AdvertiseAddress is the API server's advertise address (default
	// DefaultAdvertiseAddress); it is put on lo inside the namespace.
	AdvertiseAddress netip.Addr
	// NodeName is the node's name (default DefaultNodeName).
	NodeName string
	// Config, when set, is the whole kubeadm configuration file used instead
	// of DefaultConfig; it must advertise AdvertiseAddress. Paths in it are
	// paths inside the root folder (the node's view).
	Config string
	// Kubeadm is our kubeadm binary; when empty it is built from the
	// repository into the test's temporary folder.
	Kubeadm string
	// UpstreamDir holds the binaries of hack/build-upstream.sh (default
	// <repository>/.cache/upstream).
	UpstreamDir string
	// Scheduler also starts kube-scheduler.
	Scheduler bool
	// EtcdOnly starts etcd alone, for tests of etcd itself; Scheduler is
	// then ignored. Every file is written all the same.
	EtcdOnly bool
	// ReadyTimeout bounds the wait for each component (default 90s).
	ReadyTimeout time.Duration
}

// DefaultConfig is the kubeadm configuration Start uses when Options.Config
// is empty: defaults everywhere, except the advertise address, the node
// name and a fixed Kubernetes version (no online lookup).
func DefaultConfig(advertiseAddress netip.Addr, nodeName string) string {
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
nodeRegistration:
  name: %s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
`, advertiseAddress, nodeName, KubernetesVersion)
}

// Timings records how long Start's steps took.
type Timings struct {
	// Kubeadm is the four offline init phases together.
	Kubeadm time.Duration
	// Etcd, APIServer, ControllerManager and Scheduler run from each
	// component's start until its probe answered 200.
	Etcd, APIServer, ControllerManager, Scheduler time.Duration
	// Ready runs from etcd's start until the last component was ready.
	Ready time.Duration
}

// ControlPlane is a running control plane built from our kubeadm's files.
type ControlPlane struct {
	t            testing.TB
	dir          string
	root         string
	kubeadm      string
	addr         netip.Addr
	ns           *netNamespace
	upstreamDir  string
	readyTimeout time.Duration
	timings      Timings
	stopOnce     sync.Once
	// mu guards procs, which StopComponent and StartComponent may change
	// from another goroutine.
	mu    sync.Mutex
	procs []*process
}

// Start writes a control-plane node with our kubeadm into a temporary
// folder and runs etcd, kube-apiserver and kube-controller-manager (and
// kube-scheduler if asked) from its manifests, waiting until each is ready.
// Stop is registered with t.Cleanup. Start skips the test when a
// prerequisite is missing (fails it with KUBEADM_INTEGRATION=1) and always
// under go test -short.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("control-plane integration test skipped under -short")
	}
	if !opts.AdvertiseAddress.IsValid() {
		opts.AdvertiseAddress = netip.MustParseAddr(DefaultAdvertiseAddress)
	}
	if opts.NodeName == "" {
		opts.NodeName = DefaultNodeName
	}
	if opts.Config == "" {
		opts.Config = DefaultConfig(opts.AdvertiseAddress, opts.NodeName)
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	repo, err := testbed.RepoRoot()
	if err != nil {
		unavailable(t, "%v", err)
	}
	if opts.UpstreamDir == "" {
		opts.UpstreamDir = filepath.Join(repo, ".cache", "upstream")
	}
	components := []string{"etcd", "kube-apiserver", "kube-controller-manager"}
	if opts.Scheduler {
		components = append(components, "kube-scheduler")
	}
	if opts.EtcdOnly {
		components = []string{"etcd"}
	}
	checkPrerequisites(t, opts.UpstreamDir, components)

	dir := t.TempDir()
	cp := &ControlPlane{
		t: t, dir: dir, root: filepath.Join(dir, "root"), addr: opts.AdvertiseAddress, kubeadm: opts.Kubeadm,
		upstreamDir: opts.UpstreamDir, readyTimeout: opts.ReadyTimeout,
	}
	if cp.kubeadm == "" {
		cp.kubeadm = buildKubeadm(t, repo, dir)
	}
	for _, d := range []string{cp.root, filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("creating %s: %v", d, err)
		}
	}
	ns, err := newNetNamespace(opts.AdvertiseAddress)
	if err != nil {
		unavailable(t, "%v", err)
	}
	cp.ns = ns
	t.Cleanup(cp.Stop)
	t.Logf("control plane folder: %s", dir)

	if err := atomicfile.Write(cp.HostPath(configPath), []byte(opts.Config), 0o600); err != nil {
		t.Fatalf("writing kubeadm configuration: %v", err)
	}
	began := time.Now()
	for _, phase := range offlinePhases {
		args := append(append([]string{}, phase...), "--config", configPath)
		if out, err := cp.KubeadmCommand(args...).CombinedOutput(); err != nil {
			t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	cp.timings.Kubeadm = time.Since(began)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began = time.Now()
	for _, name := range components {
		d, err := cp.startComponent(ctx, name, opts.UpstreamDir, opts.ReadyTimeout)
		if err != nil {
			t.Fatalf("%v", err)
		}
		switch name {
		case "etcd":
			cp.timings.Etcd = d
		case "kube-apiserver":
			cp.timings.APIServer = d
		case "kube-controller-manager":
			cp.timings.ControllerManager = d
		case "kube-scheduler":
			cp.timings.Scheduler = d
		}
	}
	cp.timings.Ready = time.Since(began)
	t.Logf("control plane ready: kubeadm phases %v, etcd %v, kube-apiserver %v, kube-controller-manager %v, all components %v",
		cp.timings.Kubeadm.Round(time.Millisecond), cp.timings.Etcd.Round(time.Millisecond),
		cp.timings.APIServer.Round(time.Millisecond), cp.timings.ControllerManager.Round(time.Millisecond),
		cp.timings.Ready.Round(time.Millisecond))
	return cp
}

// startComponent runs one component from its manifest and waits until its
// probe answers 200; it returns how long that took.
func (cp *ControlPlane) startComponent(ctx context.Context, name, upstreamDir string, timeout time.Duration) (time.Duration, error) {
	manifest := cp.HostPath("/etc/kubernetes/manifests/" + name + ".yaml")
	pod, err := readPod(manifest)
	if err != nil {
		return 0, err
	}
	argv, err := hostArgs(pod, cp.root)
	if err != nil {
		return 0, fmt.Errorf("manifest %s: %w", manifest, err)
	}
	bin := upstreamBinary(upstreamDir, argv[0])
	probe, err := readinessProbe(&pod.Spec.Containers[0], cp.addr.String())
	if err != nil {
		return 0, fmt.Errorf("manifest %s: %w", manifest, err)
	}
	client, err := cp.probeClient(name, probe)
	if err != nil {
		return 0, err
	}
	cmd := cp.ns.command(bin, argv[1:]...)
	cmd.Dir = cp.dir
	began := time.Now()
	p, err := startProcess(name, cmd, cp.LogPath(name))
	if err != nil {
		return 0, err
	}
	cp.mu.Lock()
	cp.procs = append(cp.procs, p)
	cp.mu.Unlock()
	if err := waitReady(ctx, p, client, probe.url, timeout); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

// probeClient returns the HTTP client that asks a component's probe: the
// API server with the super-admin credentials, verified against ca.crt;
// other HTTPS probes without verification, as the kubelet asks them.
func (cp *ControlPlane) probeClient(name string, probe probeTarget) (*http.Client, error) {
	if name == "kube-apiserver" {
		cfg, err := cp.RESTConfig(cp.SuperAdminKubeconfig())
		if err != nil {
			return nil, err
		}
		cfg.Timeout = 5 * time.Second
		return rest.HTTPClientFor(cfg)
	}
	tr := &http.Transport{DialContext: cp.ns.dialContext, DisableKeepAlives: true}
	if probe.https {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // kubelet probes do not verify either
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}, nil
}

// waitReady polls url until it answers 200, p exits, or timeout passes.
func waitReady(ctx context.Context, p *process, client *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no answer yet"
	for {
		if !p.running() {
			return fmt.Errorf("%s exited before it was ready (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, p.logTail(30))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probe of %s: %w", p.name, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v at %s: %s; last lines of %s:\n%s", p.name, timeout, url, last, p.logPath, p.logTail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the components in reverse start order (the API server before
// etcd, which it would otherwise wait on), waiting for each, then removes
// the network namespace. When the test failed, the end of every
// component's log is logged. Idempotent.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		for i := len(cp.procs) - 1; i >= 0; i-- {
			p := cp.procs[i]
			if d := p.stop(stopGrace); d > 0 {
				cp.t.Logf("stopped %s in %v", p.name, d.Round(time.Millisecond))
			}
		}
		if cp.t.Failed() {
			for _, p := range cp.procs {
				cp.t.Logf("last lines of %s:\n%s", p.logPath, p.logTail(40))
			}
		}
		cp.ns.close()
	})
}

// running returns the running process of component name, or nil.
func (cp *ControlPlane) running(name string) *process {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for _, p := range cp.procs {
		if p.name == name && p.running() {
			return p
		}
	}
	return nil
}

// StopComponent stops the running component name (SIGTERM, SIGKILL after
// a grace period) and waits until it has ended, as the kubelet does when
// the component's manifest goes away. It may be called from any goroutine.
func (cp *ControlPlane) StopComponent(name string) error {
	p := cp.running(name)
	if p == nil {
		return fmt.Errorf("stopping %s: it is not running", name)
	}
	d := p.stop(stopGrace)
	cp.t.Logf("stopped %s in %v", name, d.Round(time.Millisecond))
	return nil
}

// StartComponent starts component name again from its manifest as it is
// on disk now, and waits until its probe answers, as the kubelet does when
// the manifest comes back. It may be called from any goroutine; a component
// that already runs is an error.
func (cp *ControlPlane) StartComponent(ctx context.Context, name string) error {
	if cp.running(name) != nil {
		return fmt.Errorf("starting %s: it already runs", name)
	}
	d, err := cp.startComponent(ctx, name, cp.upstreamDir, cp.readyTimeout)
	if err != nil {
		return err
	}
	cp.t.Logf("started %s again, ready in %v", name, d.Round(time.Millisecond))
	return nil
}

// Root is the folder kubeadm ran in with --rootfs: the node's "/".
func (cp *ControlPlane) Root() string { return cp.root }

// HostPath maps a path on the node (e.g. /etc/kubernetes/pki/ca.crt) to
// the file on this machine.
func (cp *ControlPlane) HostPath(nodePath string) string {
	return filepath.Join(cp.root, filepath.Clean("/"+nodePath))
}

// LogPath is the file a component's stdout and stderr go to.
func (cp *ControlPlane) LogPath(component string) string {
	return filepath.Join(cp.dir, "logs", component+".log")
}

// AdvertiseAddress is the API server's address inside the namespace.
func (cp *ControlPlane) AdvertiseAddress() netip.Addr { return cp.addr }

// Endpoint is the API server's URL.
func (cp *ControlPlane) Endpoint() string { return "https://" + joinHostPort(cp.addr.String(), 6443) }

// AdminKubeconfig is the path of admin.conf (group kubeadm:cluster-admins).
func (cp *ControlPlane) AdminKubeconfig() string {
	return cp.HostPath("/etc/kubernetes/admin.conf")
}

// SuperAdminKubeconfig is the path of super-admin.conf (group
// system:masters).
func (cp *ControlPlane) SuperAdminKubeconfig() string {
	return cp.HostPath("/etc/kubernetes/super-admin.conf")
}

// CACertPath is the path of the cluster CA certificate.
func (cp *ControlPlane) CACertPath() string {
	return cp.HostPath("/etc/kubernetes/pki/ca.crt")
}

// KubeadmBinary is the path of our kubeadm binary in use.
func (cp *ControlPlane) KubeadmBinary() string { return cp.kubeadm }

// DialContext opens a connection inside the control plane's network
// namespace; addr must be an IP address and port.
func (cp *ControlPlane) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return cp.ns.dialContext(ctx, network, addr)
}

// RESTConfig loads a kubeconfig file and makes it dial inside the
// namespace.
func (cp *ControlPlane) RESTConfig(kubeconfigPath string) (*rest.Config, error) {
	data, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfigPath, err)
	}
	cfg.Dial = cp.ns.dialContext
	return cfg, nil
}

// testRequestTimeout bounds each request of the clients of Client and
// ClientFor: long enough for the tests' watches.
const testRequestTimeout = 5 * time.Minute

// ClientFor returns a clientset with a kubeconfig file's credentials, made
// as kubeadm makes its clients (apiclient.FromRESTConfig).
func (cp *ControlPlane) ClientFor(kubeconfigPath string) (kubernetes.Interface, error) {
	cfg, err := cp.RESTConfig(kubeconfigPath)
	if err != nil {
		return nil, err
	}
	cs, err := apiclient.FromRESTConfig(cfg, testRequestTimeout)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", kubeconfigPath, err)
	}
	return cs, nil
}

// Client returns a clientset with the super-admin credentials.
func (cp *ControlPlane) Client() kubernetes.Interface {
	cs, err := cp.ClientFor(cp.SuperAdminKubeconfig())
	if err != nil {
		cp.t.Fatalf("%v", err)
	}
	return cs
}

// Command returns a command that runs inside the control plane's network
// namespace (where the API server's address is reachable).
func (cp *ControlPlane) Command(name string, args ...string) *exec.Cmd {
	cmd := cp.ns.command(name, args...)
	cmd.Dir = cp.dir
	return cmd
}

// KubeadmCommand returns our kubeadm with args and "--rootfs <root>",
// running inside the namespace: it sees the node's files at their usual
// paths and can reach the API server.
func (cp *ControlPlane) KubeadmCommand(args ...string) *exec.Cmd {
	return cp.Command(cp.kubeadm, append(append([]string{}, args...), "--rootfs", cp.root)...)
}
