package initphases

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Defaults of the health checks.
const (
	// defaultHealthTimeout is how long the kubelet, and then the control
	// plane, may take when the configuration gives no timeout.
	defaultHealthTimeout = 4 * time.Minute
	// defaultHealthInterval separates two attempts at one endpoint. Every
	// wait ends up to one interval after the component is ready; a failing
	// attempt (connection refused, 503) costs next to nothing.
	defaultHealthInterval = 100 * time.Millisecond
	// healthRequestTimeout bounds a single request.
	healthRequestTimeout = 10 * time.Second

	defaultKubeletHealthzAddress = "127.0.0.1"
	defaultKubeletHealthzPort    = 10248
	defaultControllerManagerPort = 10257
	defaultSchedulerPort         = 10259
	defaultComponentBindAddress  = "127.0.0.1"
)

// Clock tells the time and waits; HealthChecks take it so tests can run
// the timeouts without waiting.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// HealthChecks are the side effects of the wait-control-plane phase. The
// zero value asks the real endpoints with the real clock.
type HealthChecks struct {
	// HTTPClient asks the kubelet's and the components' health endpoints.
	// nil: a client that does not verify serving certificates (the
	// controller manager and the scheduler serve self-signed ones), as the
	// kubelet's probes do not either.
	HTTPClient *http.Client
	// APIServer asks the API server whether it is live. nil: GET /livez
	// with the admin client (Data.Client).
	APIServer func(ctx context.Context, d *Data) error
	// Clock measures the timeouts and the time between attempts (nil: the
	// real clock).
	Clock Clock
	// Interval separates two attempts at one endpoint (0: 100ms).
	Interval time.Duration
	// SkipKubelet leaves out the kubelet check, for control planes that no
	// kubelet runs (the test bed).
	SkipKubelet bool
}

// WaitControlPlanePhase waits until the kubelet and then the control-plane
// components are healthy.
func WaitControlPlanePhase() workflow.Phase[*Data] {
	return WaitControlPlanePhaseWith(HealthChecks{})
}

// WaitControlPlanePhaseWith is WaitControlPlanePhase with its side effects
// replaced.
func WaitControlPlanePhaseWith(h HealthChecks) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "wait-control-plane",
		Short: "Wait until the kubelet has started a healthy control plane",
		Long: `Wait until the kubelet answers on its health endpoint, then until the API
server, the controller manager and the scheduler that the kubelet runs from
the static Pod manifests all report healthy. The addresses asked are taken
from the manifests. The timeouts are timeouts.kubeletHealthCheck and
timeouts.controlPlaneComponentHealthCheck of the InitConfiguration.`,
		Run: func(ctx context.Context, d *Data) error {
			return WaitForControlPlane(ctx, d, h)
		},
	}
}

// WaitForControlPlane checks the kubelet's health endpoint until it
// answers 200 or timeouts.kubeletHealthCheck passes, then the API server,
// the controller manager and the scheduler side by side until each is
// healthy or timeouts.controlPlaneComponentHealthCheck passes. On failure
// it prints how to investigate to d.Out and returns the last error of
// every component that failed. It changes nothing and can be run any
// number of times. Under --dry-run nothing is asked: it shows what the dry
// run wrote instead (ShowDryRunFolder).
func WaitForControlPlane(ctx context.Context, d *Data, h HealthChecks) error {
	if d.DryRun {
		if err := ShowDryRunFolder(d); err != nil {
			return err
		}
		fmt.Fprintln(d.Out, "[dryrun] Would wait for the kubelet and the control-plane components to become healthy")
		return nil
	}
	w := newHealthWaiter(d, h)
	if HostProcesses(d) {
		fmt.Fprintf(d.Out, "[wait-control-plane] Waiting for systemd to run the control plane from the units in %q\n", unitDir(d))
	} else {
		fmt.Fprintf(d.Out, "[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from directory %q\n", d.ManifestDir)
	}
	if !h.SkipKubelet {
		if err := w.waitKubelet(ctx); err != nil {
			return err
		}
	}
	return w.waitComponents(ctx)
}

// healthWaiter runs the checks of one WaitForControlPlane call.
type healthWaiter struct {
	d        *Data
	h        HealthChecks
	client   *http.Client
	clock    Clock
	interval time.Duration
	outMu    sync.Mutex
}

func newHealthWaiter(d *Data, h HealthChecks) *healthWaiter {
	w := &healthWaiter{d: d, h: h, client: h.HTTPClient, clock: h.Clock, interval: h.Interval}
	if w.client == nil {
		w.client = staticpod.ProbeClient()
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	if w.interval <= 0 {
		w.interval = defaultHealthInterval
	}
	return w
}

func (w *healthWaiter) printf(format string, args ...any) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	fmt.Fprintf(w.d.Out, format, args...)
}

func (w *healthWaiter) timeouts() (kubelet, components time.Duration) {
	kubelet, components = defaultHealthTimeout, defaultHealthTimeout
	if t := w.d.Cfg.Timeouts; t != nil {
		if t.KubeletHealthCheck != nil {
			kubelet = t.KubeletHealthCheck.Duration
		}
		if t.ControlPlaneComponentHealthCheck != nil {
			components = t.ControlPlaneComponentHealthCheck.Duration
		}
	}
	return kubelet, components
}

// kubeletURL is the kubelet's health endpoint as its configuration sets it.
func (w *healthWaiter) kubeletURL() string {
	return KubeletHealthzURL(w.d.Cfg.ComponentConfigs.Kubelet)
}

// KubeletHealthzURL is the kubelet's health endpoint as k sets it (the
// kubelet's defaults when k is nil or leaves it unset).
func KubeletHealthzURL(k *kubeletv1beta1.KubeletConfiguration) string {
	host, port := defaultKubeletHealthzAddress, defaultKubeletHealthzPort
	if k != nil {
		if k.HealthzBindAddress != "" {
			host = k.HealthzBindAddress
		}
		if k.HealthzPort != nil && *k.HealthzPort != 0 {
			port = int(*k.HealthzPort)
		}
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/healthz"
}

func (w *healthWaiter) waitKubelet(ctx context.Context) error {
	timeout, _ := w.timeouts()
	url := w.kubeletURL()
	w.printf("[kubelet-check] Waiting for a healthy kubelet at %s. This can take up to %v\n", url, timeout)
	began := w.clock.Now()
	err := w.poll(ctx, timeout, func(ctx context.Context) error { return w.get(ctx, url) })
	took := w.clock.Now().Sub(began)
	if err != nil {
		w.printf("[kubelet-check] The kubelet is not healthy after %v\n", took)
		w.printf("%s", kubeletHint)
		return fmt.Errorf("waiting for the kubelet to become healthy at %s: %w", url, err)
	}
	w.printf("[kubelet-check] The kubelet is healthy after %v\n", took)
	return nil
}

// kubeletHint is printed when the kubelet does not become healthy.
const kubeletHint = `
The kubelet did not answer as healthy. The usual reasons are:
	- the kubelet service is not running;
	- the kubelet cannot run on this node as configured (for example, cgroups it needs are disabled).

On a machine managed by systemd, these commands tell more:
	- 'systemctl status kubelet'
	- 'journalctl -xeu kubelet'

`

// component is one control-plane component to check.
type component struct {
	name  string
	url   string
	check func(ctx context.Context) error
}

func (w *healthWaiter) components() ([]component, error) {
	cfg := w.d.Cfg
	var comps []component
	for _, name := range staticpod.ControlPlaneComponents() {
		args, err := w.flags(name)
		if err != nil {
			return nil, err
		}
		c := component{name: name}
		switch name {
		case staticpod.KubeAPIServer:
			host := flagOr(args, "advertise-address", cfg.LocalAPIEndpoint.AdvertiseAddress)
			port := flagOr(args, "secure-port", strconv.Itoa(int(cfg.LocalAPIEndpoint.BindPort)))
			base := "https://" + net.JoinHostPort(host, port)
			c.url = base + "/livez"
			c.check = w.apiServerLive(base)
		case staticpod.KubeControllerManager:
			c.url = componentURL(args, defaultControllerManagerPort, "/healthz")
		case staticpod.KubeScheduler:
			c.url = componentURL(args, defaultSchedulerPort, "/livez")
		}
		if c.check == nil {
			url := c.url
			c.check = func(ctx context.Context) error { return w.get(ctx, url) }
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// flags are the command-line flags component runs with: those of its
// manifest, or of its unit for a control plane of host processes.
func (w *healthWaiter) flags(component string) (map[string]string, error) {
	if !HostProcesses(w.d) {
		return staticpod.ReadFlags(staticpod.ManifestPath(w.d.ManifestDir, component))
	}
	p := hostprocess.UnitPath(w.d.SystemRoot, component)
	pod, ours, err := hostprocess.ReadUnit(p, component)
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, fmt.Errorf("%s was not written by kubeadm", p)
	}
	return staticpod.Flags(pod), nil
}

func componentURL(args map[string]string, defaultPort int, path string) string {
	host := flagOr(args, "bind-address", defaultComponentBindAddress)
	port := flagOr(args, "secure-port", strconv.Itoa(defaultPort))
	return "https://" + net.JoinHostPort(host, port) + path
}

func flagOr(args map[string]string, name, def string) string {
	if v, ok := args[name]; ok && v != "" {
		return v
	}
	return def
}

func (w *healthWaiter) waitComponents(ctx context.Context) error {
	_, timeout := w.timeouts()
	comps, err := w.components()
	if err != nil {
		return fmt.Errorf("finding the control-plane components to check: %w", err)
	}
	w.printf("[control-plane-check] Waiting for healthy control plane components. This can take up to %v\n", timeout)
	for _, c := range comps {
		w.printf("[control-plane-check] Checking %s at %s\n", c.name, c.url)
	}
	began := w.clock.Now()
	errs := make([]error, len(comps))
	var wg sync.WaitGroup
	for i, c := range comps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.poll(ctx, timeout, c.check)
			took := w.clock.Now().Sub(began)
			if err != nil {
				w.printf("[control-plane-check] %s is not healthy after %v\n", c.name, took)
				errs[i] = fmt.Errorf("%s at %s: %w", c.name, c.url, err)
				return
			}
			w.printf("[control-plane-check] %s is healthy after %v\n", c.name, took)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if HostProcesses(w.d) {
			w.printf("%s", unitHint)
			return fmt.Errorf("waiting for the control plane to become healthy: %w", err)
		}
		w.printf(componentHint, w.d.Cfg.NodeRegistration.CRISocket)
		return fmt.Errorf("waiting for the control plane to become healthy: %w", err)
	}
	return nil
}

// componentHint is printed when a component does not become healthy; %[1]s
// is the CRI socket.
const componentHint = `
A control-plane component did not answer as healthy: its container may have
crashed or exited after the container runtime started it. List the
Kubernetes containers with your runtime's command-line tool, for example:
	- 'crictl --runtime-endpoint %[1]s ps -a | grep kube | grep -v pause'
then read the logs of the failing one:
	- 'crictl --runtime-endpoint %[1]s logs CONTAINERID'

`

// unitHint is printed when a component run by systemd does not become
// healthy.
const unitHint = `
A control-plane component did not answer as healthy. Ask systemd how its
unit fares and read its log, for example:
	- 'systemctl status kube-apiserver'
	- 'journalctl -xeu kube-apiserver'

`

// poll calls check until it succeeds, ctx ends or timeout passes on the
// waiter's clock; it then returns check's last error. One attempt every
// interval, so the number of attempts is bounded by timeout/interval + 1.
func (w *healthWaiter) poll(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	deadline := w.clock.Now().Add(timeout)
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, min(healthRequestTimeout, max(deadline.Sub(w.clock.Now()), time.Second)))
		err := check(attemptCtx)
		cancel()
		if err == nil {
			return nil
		}
		if !w.clock.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-w.clock.After(w.interval):
		}
	}
}

// get asks url and wants 200.
func (w *healthWaiter) get(ctx context.Context, url string) error {
	return staticpod.Probe(ctx, w.client, url)
}

// apiServerLive returns the check of this node's own API server: GET
// /livez at base, the address and port of its manifest, as printed (not
// the server admin.conf names, which may be a load balancer or, on a
// joining control-plane node, the cluster's other API servers), with
// admin.conf's CA and credentials, so that it also works with anonymous
// requests turned off. Without admin.conf it probes base as the other
// components are probed.
func (w *healthWaiter) apiServerLive(base string) func(ctx context.Context) error {
	if w.h.APIServer != nil {
		return func(ctx context.Context) error { return w.h.APIServer(ctx, w.d) }
	}
	var client kubernetes.Interface
	return func(ctx context.Context) error {
		if client == nil {
			admin := filepath.Join(w.d.KubeconfigDir, "admin.conf")
			if _, err := os.Stat(admin); err != nil {
				return w.get(ctx, base+"/livez")
			}
			c, err := apiclient.FromKubeconfigAt(admin, base, apiCallTimeout(w.d))
			if err != nil {
				return err
			}
			client = c
		}
		return client.Discovery().RESTClient().Get().AbsPath("/livez").Do(ctx).Error()
	}
}
