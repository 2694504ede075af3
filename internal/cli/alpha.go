package cli

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// newAlphaCmd is the group of experimental commands. Upstream kubeadm
// keeps it although every command it had has graduated or gone; ours
// holds the self-hosted control plane (selfhosting), whose command name is
// the one upstream had until v1.19.
func newAlphaCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alpha",
		Short: "Experimental commands",
	}
	cmd.AddCommand(newSelfHostingCmd(streams))
	return cmd
}

// The node's folders, as init writes them.
const (
	kubernetesDir = "/etc/kubernetes"
	manifestDir   = "/etc/kubernetes/manifests"
)

func newSelfHostingCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "selfhosting",
		Short: "Run the control plane as DaemonSets instead of static Pods (docs/decisions/014)",
	}
	cmd.AddCommand(
		newPivotCmd(streams, true),
		newPivotCmd(streams, false),
		newCheckpointerCmd(),
	)
	return cmd
}

// selfHostingOptions are the flags of pivot and unpivot.
type selfHostingOptions struct {
	kubeconfig string
	force      bool
	timeout    time.Duration
}

// newPivotCmd is "kubeadm alpha selfhosting pivot" (to DaemonSets) or, with
// to false, "unpivot" (back to static Pods). Both run on the cluster's
// only control-plane node and ask for confirmation unless --force.
func newPivotCmd(streams Streams, to bool) *cobra.Command {
	o := selfHostingOptions{kubeconfig: filepath.Join(kubernetesDir, "admin.conf"), timeout: 5 * time.Minute}
	use, short, long := "pivot", "Turn this node's static control-plane Pods into DaemonSets",
		`Turn the static Pods of kube-scheduler, kube-controller-manager and
kube-apiserver (in that order) into DaemonSets in kube-system, one at a time:
each manifest is kept as a checkpoint under /etc/kubernetes/self-hosted, its
DaemonSet is created, and the manifest is removed once the DaemonSet's Pod has
started on this node. A self-hosted-checkpointer static Pod puts the
checkpoints back while the control plane is down (after a reboot), so the
cluster comes back by itself. etcd stays a static Pod. Only a cluster with one
control-plane node is supported. Running it again finishes an interrupted run.`
	question := "[self-hosted] This turns the control plane into DaemonSets, which kubeadm upgrade does not support yet. Go on? [y/N]: "
	if !to {
		use, short, long = "unpivot", "Turn the self-hosted control plane back into static Pods",
			`Remove the self-hosted-checkpointer, then write each component's checkpoint
back as its static Pod manifest and delete its DaemonSet, one at a time with
kube-apiserver last. Running it again finishes an interrupted run.`
		question = "[self-hosted] This turns the self-hosted control plane back into static Pods. Go on? [y/N]: "
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !o.force && !askYes(streams)(question) {
				return fmt.Errorf("%s aborted: nothing was changed (answer y, or run it with --force)", use)
			}
			n, err := selfHostingNode(cmd.Context(), o, streams)
			if err != nil {
				return err
			}
			if to {
				if err := n.Pivot(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(streams.Out, "[self-hosted] The control plane is self-hosted")
				return nil
			}
			if err := n.Unpivot(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(streams.Out, "[self-hosted] The control plane runs from static Pods again")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "The kubeconfig file to talk to the cluster with.")
	f.BoolVarP(&o.force, "force", "f", false, "Go on without asking for confirmation.")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for each component.")
	return cmd
}

// selfHostingNode is this machine as pivot and unpivot see it: the
// cluster's configuration from kubeadm-config, the node's name from the
// kubelet's credentials.
func selfHostingNode(ctx context.Context, o selfHostingOptions, streams Streams) (selfhosting.Node, error) {
	c, _, err := apiclient.FromKubeconfig(o.kubeconfig, v1beta4.DefaultKubernetesAPICall)
	if err != nil {
		return selfhosting.Node{}, err
	}
	node, err := selfhosting.NodeName(filepath.Join(kubernetesDir, "kubelet.conf"))
	if err != nil {
		return selfhosting.Node{}, fmt.Errorf("finding this node's name: %w", err)
	}
	cluster, err := storedCluster(ctx, c)
	if err != nil {
		return selfhosting.Node{}, err
	}
	return selfhosting.ForNode(selfhosting.NodeOptions{
		Client:        c,
		Cluster:       cluster,
		NodeName:      node,
		KubernetesDir: kubernetesDir,
		ManifestDir:   manifestDir,
		Timeout:       o.timeout,
		Out:           streams.Out,
	}), nil
}

// storedCluster reads what pivot needs of the ClusterConfiguration of
// kubeadm-config: the image repository of the pause image.
func storedCluster(ctx context.Context, c kubernetes.Interface) (*kubeadm.ClusterConfiguration, error) {
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, uploadconfig.KubeadmConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's configuration: %w", err)
	}
	cc := &v1beta4.ClusterConfiguration{}
	if err := yaml.Unmarshal([]byte(cm.Data[uploadconfig.ClusterConfigurationKey]), cc); err != nil {
		return nil, fmt.Errorf("reading the ClusterConfiguration of ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	repo := cc.ImageRepository
	if repo == "" {
		repo = v1beta4.DefaultImageRepository
	}
	return &kubeadm.ClusterConfiguration{ImageRepository: repo}, nil
}

// newCheckpointerCmd is the program of the self-hosted-checkpointer static
// Pod. Hidden: people do not run it by hand.
func newCheckpointerCmd() *cobra.Command {
	o := selfhosting.CheckpointerOptions{
		Kubeconfig:    filepath.Join(kubernetesDir, "kubelet.conf"),
		ManifestDir:   manifestDir,
		CheckpointDir: filepath.Join(kubernetesDir, selfhosting.CheckpointFolder),
		Interval:      selfhosting.DefaultInterval,
		Grace:         selfhosting.DefaultGrace,
		Logf:          klog.Infof,
	}
	cmd := &cobra.Command{
		Use:    "checkpointer",
		Short:  "Put the control plane's checkpoints in place while it is down (run by the self-hosted-checkpointer static Pod)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Interval <= 0 {
				return errors.New("--interval must be positive")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return selfhosting.RunCheckpointer(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "The kubelet's kubeconfig, to read this node's Pods with.")
	f.StringVar(&o.ManifestDir, "manifest-dir", o.ManifestDir, "The kubelet's static Pod folder.")
	f.StringVar(&o.CheckpointDir, "checkpoint-dir", o.CheckpointDir, "The folder of the checkpoints.")
	f.DurationVar(&o.Interval, "interval", o.Interval, "How often to look.")
	f.DurationVar(&o.Grace, "grace", o.Grace, "How long a component may be down before its checkpoint is put in place.")
	return cmd
}
