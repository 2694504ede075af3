package initphases

import (
	"context"
	"fmt"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// MarkControlPlanePhase labels this node's Node object as a control-plane
// node and adds the taints of nodeRegistration.taints, once its kubelet
// has registered it. Idempotent: labels and taints already there are left
// alone (see noderole.MarkControlPlane).
func MarkControlPlanePhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "mark-control-plane",
		Short: "Label and taint the node as a control-plane node",
		Long: `Wait for the kubelet to register this node, then label its Node object as a
control-plane node and add the taints of nodeRegistration.taints (by default
node-role.kubernetes.io/control-plane:NoSchedule, which keeps ordinary
workloads off the node).`,
		Example: `  # Mark this node as "kubeadm init" does
  kubeadm init phase mark-control-plane --config kubeadm.yaml

  # Mark another node
  kubeadm init phase mark-control-plane --node-name cp-2`,
		InheritFlags: []string{"config", "dry-run", "node-name"},
		Run:          runMarkControlPlane,
	}
}

func runMarkControlPlane(ctx context.Context, d *Data) error {
	name := d.Cfg.NodeRegistration.Name
	taints := d.Cfg.NodeRegistration.Taints
	fmt.Fprintf(d.Out, "[mark-control-plane] Marking node %s as a control-plane node with the labels %v\n", name, noderole.ControlPlaneLabels())
	if len(taints) > 0 {
		shown := make([]string, 0, len(taints))
		for i := range taints {
			shown = append(shown, taints[i].ToString())
		}
		fmt.Fprintf(d.Out, "[mark-control-plane] Marking node %s as a control-plane node with the taints %v\n", name, shown)
	}
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	return noderole.MarkControlPlane(ctx, c, name, taints, noderole.Options{Timeout: apiCallTimeout(d)})
}

// apiCallTimeout is timeouts.kubernetesAPICall, or its default.
func apiCallTimeout(d *Data) time.Duration {
	if t := d.Cfg.Timeouts; t != nil && t.KubernetesAPICall != nil && t.KubernetesAPICall.Duration > 0 {
		return t.KubernetesAPICall.Duration
	}
	return v1beta4.DefaultKubernetesAPICall
}
