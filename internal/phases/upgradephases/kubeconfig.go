package upgradephases

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// kubeletKubeconfig is the kubelet's kubeconfig file, in KubernetesDir.
const kubeletKubeconfig = "kubelet.conf"

// kubeconfigPhase is upstream's hidden "kubeconfig" phase of "upgrade
// apply" and "upgrade node": left out of the help, it may be named in
// --skip-phases. (This runner also makes a hidden "phase kubeconfig"
// command, as for join's check-etcd; upstream's makes none for a hidden
// phase.)
func kubeconfigPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubeconfig",
		Short: "Point this control-plane node's kubelet at its own API server",
		Long: `On a control-plane node whose kubelet.conf still names the cluster's
controlPlaneEndpoint (as kubeadm releases before the kubelet's local mode left
it), make it name this node's own API server instead, and restart the kubelet.
A kubelet.conf that names anything else, a missing one and a worker node are
left alone.`,
		Hidden:       true,
		InheritFlags: []string{"config", "kubeconfig", "dry-run"},
		Run:          runKubeconfig,
	}
}

// runKubeconfig points kubelet.conf at the local API server when it names
// the control-plane endpoint, as upstream's upgrade does: a kubelet should
// never talk to a newer API server than its own node's during an upgrade.
// Running it again changes nothing.
func runKubeconfig(ctx context.Context, d *Data) error {
	if !d.Node.ControlPlane {
		return nil
	}
	if err := pointKubeletAtLocal(ctx, d); err != nil {
		return err
	}
	nodeDone(d, "[upgrade/kubeconfig] The kubeconfig files for this node were successfully upgraded!")
	return nil
}

// pointKubeletAtLocal makes a control-plane node's kubelet.conf that names
// the control-plane endpoint name the node's own API server.
func pointKubeletAtLocal(ctx context.Context, d *Data) error {
	path := filepath.Join(d.KubernetesDir, kubeletKubeconfig)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return err
	}
	cluster, err := kubeconfig.CurrentCluster(path, kc)
	if err != nil {
		return err
	}
	local, err := kubeconfig.LocalAPIServerURL(d.Cfg)
	if err != nil {
		return err
	}
	shared, err := kubeconfig.ControlPlaneURL(d.Cfg, nil)
	if err != nil {
		return err
	}
	if cluster.Server != shared || shared == local {
		return nil
	}
	if d.DryRun {
		fmt.Fprintf(d.Out, "[dryrun] Would point %q at this node's API server %s instead of %s, and restart the kubelet\n", path, local, cluster.Server)
		return nil
	}
	fmt.Fprintf(d.Out, "[upgrade/kubeconfig] Pointing %q at this node's API server %s instead of %s\n", path, local, cluster.Server)
	cluster.Server = local
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		return err
	}
	kubelet.NewService(d.Service, d.Out).Restart(ctx)
	return nil
}
