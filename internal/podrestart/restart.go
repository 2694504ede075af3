package podrestart

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Labels the kubelet puts on the containers it runs.
const (
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
)

// Runtime is what a Restarter asks of the container runtime.
type Runtime interface {
	ListContainers(ctx context.Context, filter cri.ContainerFilter) ([]cri.Container, error)
	StopContainer(ctx context.Context, id string, grace time.Duration) error
}

// Restarter restarts control-plane containers on this node.
type Restarter struct {
	Runtime Runtime
	// Timeout bounds the wait for the new container to be healthy.
	Timeout time.Duration
	// Grace is the time the old container gets to stop before it is
	// killed (0: 30 s, the Pods' default termination grace period).
	Grace time.Duration
	// Interval separates two looks (0: 500 ms).
	Interval time.Duration
	// Healthy asks a health endpoint; nil: staticpod.Probe with
	// staticpod.ProbeClient, as the kubelet's probes ask.
	Healthy func(ctx context.Context, url string) error
	// Leaders, when set, makes RestartPod and WaitReplacedPod of the
	// controller manager or the scheduler last until it leads again: a
	// new process waits out its predecessor's lease, about 15 s, before
	// it leads.
	Leaders *leaderlease.Waiter

	client *http.Client
}

// probeTimeout bounds one request to a health endpoint.
const probeTimeout = 5 * time.Second

// Running returns the ID of the running container of component (the
// container of that name in a kube-system Pod), or "" when none runs.
func (r *Restarter) Running(ctx context.Context, component string) (string, error) {
	c, err := r.running(ctx, component)
	return c.ID, err
}

// running is the newest running container of component (a zero
// Container when none runs).
func (r *Restarter) running(ctx context.Context, component string) (cri.Container, error) {
	cs, err := r.Runtime.ListContainers(ctx, cri.ContainerFilter{Labels: map[string]string{
		labelPodNamespace: metav1.NamespaceSystem, labelContainerName: component,
	}})
	if err != nil {
		return cri.Container{}, fmt.Errorf("listing the containers of %s: %w", component, err)
	}
	latest := cri.Container{}
	for _, c := range cs {
		if c.State == cri.ContainerRunning && (latest.ID == "" || c.CreatedAt.After(latest.CreatedAt)) {
			latest = c
		}
	}
	return latest, nil
}

// RestartPod restarts component (see Restart), whose static Pod manifest
// in manifestDir names its health endpoint; then, with Leaders set, a
// controller manager or scheduler is waited for until it leads again.
func (r *Restarter) RestartPod(ctx context.Context, manifestDir, component string) error {
	return r.pod(ctx, manifestDir, component, func(url string) (cri.Container, error) { return r.restart(ctx, component, url) })
}

// WaitReplacedPod is WaitHealthy for component, whose static Pod manifest
// in manifestDir names its health endpoint, followed by the wait for it to
// lead (see RestartPod).
func (r *Restarter) WaitReplacedPod(ctx context.Context, manifestDir, component, old string) error {
	return r.pod(ctx, manifestDir, component, func(url string) (cri.Container, error) { return r.waitHealthy(ctx, component, old, url) })
}

// pod reads component's manifest, has replace make its new container
// healthy (it returns that container), then waits for it to lead.
func (r *Restarter) pod(ctx context.Context, manifestDir, component string, replace func(url string) (cri.Container, error)) error {
	pod, err := staticpod.ReadManifest(staticpod.ManifestPath(manifestDir, component))
	if err != nil {
		return err
	}
	url, err := staticpod.HealthURL(pod)
	if err != nil {
		return fmt.Errorf("%s: %w", component, err)
	}
	c, err := replace(url)
	if err != nil {
		return err
	}
	// The old container stopped before the new one was made: any renewal
	// of the Lease after that is the new process's, or another node's.
	return r.Leaders.WaitRestarted(ctx, component, staticpod.CommandLine(pod), c.CreatedAt)
}

// Restart stops the running container of component and waits until the
// kubelet runs another one and url (its health endpoint, see
// staticpod.HealthURL) answers 200. Without a running container it only
// waits for one to be healthy. The error says what was seen last.
func (r *Restarter) Restart(ctx context.Context, component, url string) error {
	_, err := r.restart(ctx, component, url)
	return err
}

// restart is Restart that returns the new container.
func (r *Restarter) restart(ctx context.Context, component, url string) (cri.Container, error) {
	old, err := r.Running(ctx, component)
	if err != nil {
		return cri.Container{}, err
	}
	if old != "" {
		grace := r.Grace
		if grace <= 0 {
			grace = 30 * time.Second
		}
		if err := r.Runtime.StopContainer(ctx, old, grace); err != nil {
			return cri.Container{}, fmt.Errorf("stopping the %s container %s: %w", component, old, err)
		}
	}
	return r.waitHealthy(ctx, component, old, url)
}

// WaitHealthy waits until a container of component other than old runs
// and url answers 200 (old "" accepts any running container).
func (r *Restarter) WaitHealthy(ctx context.Context, component, old, url string) error {
	_, err := r.waitHealthy(ctx, component, old, url)
	return err
}

// waitHealthy is WaitHealthy that returns the healthy container.
func (r *Restarter) waitHealthy(ctx context.Context, component, old, url string) (cri.Container, error) {
	interval := r.Interval
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	var last error
	for {
		c, err := r.running(ctx, component)
		switch {
		case err != nil:
			last = err
		case c.ID == "" || c.ID == old:
			last = errors.New("the kubelet has not started a new container yet")
		default:
			err := r.Probe(ctx, url)
			if err == nil {
				return c, nil
			}
			last = fmt.Errorf("%s: %w", url, err)
		}
		select {
		case <-ctx.Done():
			return cri.Container{}, fmt.Errorf("%s not healthy after %v: %w", component, r.Timeout, last)
		case <-time.After(interval):
		}
	}
}

// Probe asks url once, as the kubelet's probes ask, and wants 200.
func (r *Restarter) Probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if r.Healthy != nil {
		return r.Healthy(ctx, url)
	}
	if r.client == nil {
		r.client = staticpod.ProbeClient()
	}
	return staticpod.Probe(ctx, r.client, url)
}
