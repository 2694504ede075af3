package carotation

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/podrestart"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// NodeComponents are the Components of a real control-plane node: the
// static Pod manifests say where each answers, Restarter restarts them
// through the container runtime (see
// docs/decisions/008-restarting-components-after-renewal.md).
type NodeComponents struct {
	ManifestDir string
	Restarter   *podrestart.Restarter
}

// Running returns the ID of component's running container.
func (n *NodeComponents) Running(ctx context.Context, component string) (string, error) {
	return n.Restarter.Running(ctx, component)
}

// Restart restarts component's container and waits until the new one is
// healthy and, with the Restarter's Leaders set, leads.
func (n *NodeComponents) Restart(ctx context.Context, component string) error {
	return n.Restarter.RestartPod(ctx, n.ManifestDir, component)
}

// WaitReplaced waits until a healthy container of component other than
// old runs.
func (n *NodeComponents) WaitReplaced(ctx context.Context, component, old string) error {
	return n.Restarter.WaitReplacedPod(ctx, n.ManifestDir, component, old)
}

// KubeletRestarter restarts the kubelet through the init system and waits
// until its health endpoint answers.
type KubeletRestarter struct {
	Host kubelet.Host
	// HealthURL is the kubelet's health endpoint
	// (http://127.0.0.1:10248/healthz by default).
	HealthURL string
	Timeout   time.Duration
	// Probe asks the health endpoint once (nil: as the kubelet's own
	// probes ask, staticpod.Probe).
	Probe func(ctx context.Context, url string) error
}

// DefaultKubeletHealthURL is where the kubelet answers by default
// (healthzBindAddress 127.0.0.1, healthzPort 10248).
const DefaultKubeletHealthURL = "http://127.0.0.1:10248/healthz"

// Restart restarts the kubelet and waits until it is healthy.
func (k *KubeletRestarter) Restart(ctx context.Context) error {
	var out []byte
	var err error
	if k.Host.Exists("/run/openrc") && !k.Host.Exists("/run/systemd/system") {
		out, err = k.Host.Run(ctx, "rc-service", kubelet.ServiceName, "restart")
	} else {
		out, err = k.Host.Run(ctx, "systemctl", "restart", kubelet.ServiceName)
	}
	if err != nil {
		return fmt.Errorf("restarting the kubelet: %w: %s", err, out)
	}
	probe := k.Probe
	if probe == nil {
		client := staticpod.ProbeClient()
		probe = func(ctx context.Context, url string) error { return staticpod.Probe(ctx, client, url) }
	}
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		err := probe(pctx, k.HealthURL)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the kubelet not healthy %v after its restart: %w", k.Timeout, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
