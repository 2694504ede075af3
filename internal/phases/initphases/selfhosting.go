package initphases

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// SelfHostingPhase pivots the new control plane to DaemonSets under the
// SelfHosting feature gate (docs/decisions/014-self-hosted-control-plane.md),
// after the addons, as kubeadm v1.8–v1.11 did. Hidden: upstream v1.37 has no
// such phase, and without the gate it does nothing.
func SelfHostingPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "self-hosting",
		Short:        "Turn the control plane's static Pods into DaemonSets (SelfHosting feature gate)",
		Hidden:       true,
		InheritFlags: []string{"config", "dry-run", "feature-gates", "kubeconfig"},
		Run:          runSelfHosting,
	}
}

func runSelfHosting(ctx context.Context, d *Data) error {
	if !selfhosting.Enabled(d.Cfg.FeatureGates) {
		return nil
	}
	if d.DryRun {
		fmt.Fprintf(d.Out, "[dryrun] Would turn the static Pods of %v into DaemonSets, one at a time, and install the %s static Pod\n", selfhosting.Components(), selfhosting.Checkpointer)
		return nil
	}
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	timeout := 4 * time.Minute
	if t := d.Cfg.Timeouts; t != nil && t.ControlPlaneComponentHealthCheck != nil {
		timeout = t.ControlPlaneComponentHealthCheck.Duration
	}
	n := selfhosting.ForNode(selfhosting.NodeOptions{
		Client:        c,
		Cluster:       &d.Cfg.ClusterConfiguration,
		NodeName:      d.Cfg.NodeRegistration.Name,
		KubernetesDir: KubernetesDir,
		ManifestDir:   d.ManifestDir,
		Timeout:       timeout,
		Out:           d.Out,
	})
	return n.Pivot(ctx)
}
