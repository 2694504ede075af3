package initphases

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// uploadConfigFlags are the flags of "kubeadm init" the upload-config
// phase commands accept, as upstream's do.
func uploadConfigFlags() []string {
	return []string{"config", "cri-socket", "dry-run", "kubeconfig"}
}

// UploadConfigPhase stores the cluster's configuration in the cluster: the
// ClusterConfiguration in kube-system/kubeadm-config and the kubelets'
// KubeletConfiguration in kube-system/kubelet-config, each readable by
// nodes and bootstrap tokens through a Role and RoleBinding. Every object
// is created or replaced, so the phase converges when run again.
func UploadConfigPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:    "upload-config",
		Aliases: []string{"uploadconfig"},
		Short:   "Store the kubeadm and kubelet configuration in ConfigMaps",
		Long: `Store the cluster's configuration in ConfigMaps of the kube-system namespace,
where joining nodes and later kubeadm commands (upgrades among them) read it.`,
		Phases: []workflow.Phase[*Data]{
			{
				Name:           "all",
				Short:          "Store both configurations",
				RunAllSiblings: true,
				InheritFlags:   uploadConfigFlags(),
			},
			{
				Name:  "kubeadm",
				Short: "Store the ClusterConfiguration in the kubeadm-config ConfigMap",
				Long: `Store the ClusterConfiguration in the kubeadm-config ConfigMap of the
kube-system namespace, and let nodes and bootstrap tokens read it. Joining
nodes and "kubeadm upgrade" take the cluster-wide settings from there.

"kubeadm config" can show what is stored.`,
				Example: `  # Store the cluster-wide part of a configuration file
  kubeadm init phase upload-config kubeadm --config kubeadm.yaml`,
				InheritFlags: uploadConfigFlags(),
				Run:          runUploadKubeadmConfig,
			},
			{
				Name:  "kubelet",
				Short: "Store the kubelets' configuration in the kubelet-config ConfigMap",
				Long: `Store the KubeletConfiguration all kubelets of the cluster share in the
kubelet-config ConfigMap of the kube-system namespace, and let nodes and
bootstrap tokens read it. Joining nodes write their kubelet's config.yaml
from it.`,
				Example: `  # Store the kubelet configuration of a configuration file
  kubeadm init phase upload-config kubelet --config kubeadm.yaml`,
				InheritFlags: uploadConfigFlags(),
				Run:          runUploadKubeletConfig,
			},
		},
	}
}

func runUploadKubeadmConfig(ctx context.Context, d *Data) error {
	fmt.Fprintf(d.Out, "[upload-config] Storing the cluster configuration in ConfigMap %q in namespace %q\n",
		uploadconfig.KubeadmConfigMap, metav1.NamespaceSystem)
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	return uploadconfig.UploadKubeadmConfig(ctx, c, &d.Cfg.ClusterConfiguration)
}

func runUploadKubeletConfig(ctx context.Context, d *Data) error {
	fmt.Fprintf(d.Out, "[kubelet] Storing the configuration all kubelets share in ConfigMap %q in namespace %q\n",
		uploadconfig.KubeletConfigMap, metav1.NamespaceSystem)
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	return uploadconfig.UploadKubeletConfig(ctx, c, &d.Cfg.ClusterConfiguration)
}
