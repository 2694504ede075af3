package upgradephases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// LoadOptions are what Load needs besides the Data the command filled in.
type LoadOptions struct {
	Env config.Environment
	// Client reads the cluster (the real one, also under --dry-run).
	Client kubernetes.Interface
	// Target is the version "upgrade apply" upgrades to, resolved; "upgrade
	// node" leaves it "" and takes the cluster's.
	Target string
	// AllowExperimental and AllowRC accept pre-release targets (apply).
	AllowExperimental, AllowRC bool
	// PrintConfig prints the configuration the upgrade uses.
	PrintConfig bool
}

// Load completes d from this node's files and the cluster: the node's
// registration, the cluster's configuration at the target version (Cfg,
// CertDir) and, for apply, the version skew policy. The command sets
// d's settings, folders, output and client first.
func (d *Data) Load(ctx context.Context, o LoadOptions) error {
	var err error
	if d.Node, err = upgrade.ReadLocalNode(d.KubernetesDir, d.ManifestDir, d.KubeletDir); err != nil {
		return err
	}
	if err := d.Node.ReadUnits(d.SystemRoot); err != nil {
		return err
	}
	if err := d.Node.ReadCheckpoints(d.KubernetesDir, d.ManifestDir); err != nil {
		return err
	}
	// Only control-plane nodes upgrade kube-proxy; a worker's credentials
	// may not even read its ConfigMap.
	cluster, err := upgrade.FetchClusterConfig(ctx, o.Client, d.Upgrade.Timeouts, d.Out, d.Node.ControlPlane)
	if err != nil {
		return err
	}
	target := o.Target
	if !d.Apply {
		target = cluster.Cluster.KubernetesVersion
	}
	if d.Cfg, err = d.nodeConfig(ctx, o.Env, cluster, target); err != nil {
		return err
	}
	d.CertDir = d.Cfg.CertificatesDir
	if d.Apply {
		s, err := upgrade.ReadClusterState(ctx, o.Client)
		if err != nil {
			return err
		}
		if d.Policy, err = upgrade.NewVersionPolicy(s, d.Cfg.KubernetesVersion, o.AllowExperimental, o.AllowRC); err != nil {
			return err
		}
	}
	if o.PrintConfig {
		return upgrade.PrintConfig(d.Out, &d.Cfg.ClusterConfiguration)
	}
	return nil
}

// nodeConfig is the cluster's configuration at version target, defaulted
// as init's, with this node's registration and API endpoint as its files
// and the UpgradeConfiguration say.
func (d *Data) nodeConfig(ctx context.Context, env config.Environment, cluster *config.Documents, target string) (*kubeadm.InitConfiguration, error) {
	docs := *cluster
	cc := *cluster.Cluster
	cc.KubernetesVersion = target
	docs.Cluster = &cc
	serial := d.ImagePullSerial
	cfg, err := env.NodeConfiguration(ctx, &docs, config.Node{
		NodeRegistration: kubeadm.NodeRegistrationOptions{
			Name:            d.Node.Name,
			CRISocket:       d.Node.CRISocket,
			ImagePullPolicy: corev1.PullPolicy(d.ImagePullPolicy),
			ImagePullSerial: &serial,
		},
		LocalAPIEndpoint: d.Node.Endpoint,
		ControlPlane:     d.Node.ControlPlane,
		Timeouts:         d.Upgrade.Timeouts,
	})
	if err != nil {
		return nil, fmt.Errorf("the cluster's configuration: %w", err)
	}
	return cfg, nil
}
