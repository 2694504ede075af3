package selfhosting

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// NodeOptions say which node ForNode sets up.
type NodeOptions struct {
	Client kubernetes.Interface
	// Cluster is the cluster's configuration (its pause image runs the
	// checkpointer).
	Cluster  *kubeadm.ClusterConfiguration
	NodeName string
	// KubernetesDir is /etc/kubernetes; ManifestDir the kubelet's static
	// Pod folder.
	KubernetesDir, ManifestDir string
	// Timeout bounds the wait for each component.
	Timeout time.Duration
	Out     io.Writer
}

// ForNode returns the Node that pivots this machine: the checkpointer runs
// the running kubeadm binary (copied to kubeadmbinary.Path), the mode is
// recorded in the kubeadm-config ConfigMap, and health is asked as the
// kubelet's probes ask it.
func ForNode(o NodeOptions) Node {
	return Node{
		Client:        o.Client,
		NodeName:      o.NodeName,
		ManifestDir:   o.ManifestDir,
		CheckpointDir: filepath.Join(o.KubernetesDir, CheckpointFolder),
		InstallCheckpointer: func() error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the kubeadm binary: %w", err)
			}
			sum, err := kubeadmbinary.SHA256(exe)
			if err != nil {
				return err
			}
			if err := kubeadmbinary.Install(exe, kubeadmbinary.Path, sum); err != nil {
				return err
			}
			data, err := staticpod.Marshal(CheckpointerPod(CheckpointerPodOptions{
				Image:         images.PauseImage(o.Cluster),
				BinarySHA256:  sum,
				KubernetesDir: o.KubernetesDir,
				ManifestDir:   o.ManifestDir,
			}))
			if err != nil {
				return err
			}
			_, err = staticpod.WriteManifest(o.ManifestDir, Checkpointer, data)
			return err
		},
		Record: func(ctx context.Context, on bool) error {
			return RecordGate(ctx, o.Client, on, o.Timeout)
		},
		Healthy:  ProbeHealth,
		Timeout:  o.Timeout,
		Interval: time.Second,
		Out:      o.Out,
	}
}

// RecordGate sets (on) or removes the Gate in the ClusterConfiguration of
// the kubeadm-config ConfigMap, changing nothing else of the document; a
// ConfigMap that already says so is left alone.
func RecordGate(ctx context.Context, c kubernetes.Interface, on bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	return apiclient.RetryWrite(ctx, func() error {
		cm, err := cms.Get(ctx, uploadconfig.KubeadmConfigMap, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cc := &v1beta4.ClusterConfiguration{}
		if err := yaml.Unmarshal([]byte(cm.Data[uploadconfig.ClusterConfigurationKey]), cc); err != nil {
			return fmt.Errorf("reading the ClusterConfiguration of ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
		if v, set := cc.FeatureGates[Gate]; (on && set && v) || (!on && !set) {
			return nil
		}
		if on {
			if cc.FeatureGates == nil {
				cc.FeatureGates = map[string]bool{}
			}
			cc.FeatureGates[Gate] = true
		} else {
			delete(cc.FeatureGates, Gate)
		}
		doc, err := yaml.Marshal(cc)
		if err != nil {
			return err
		}
		cm.Data[uploadconfig.ClusterConfigurationKey] = string(doc)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// ProbeHealth asks the health endpoint of a component's static Pod (its
// probe's), as the kubelet's probe does, for at most 3 s.
func ProbeHealth(ctx context.Context, pod *corev1.Pod) error {
	u, err := staticpod.HealthURL(pod)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return staticpod.Probe(ctx, staticpod.ProbeClient(), u)
}
