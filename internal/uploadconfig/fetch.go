package uploadconfig

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/addons/kubeproxy"
	"github.com/kubeadm-go/kubeadm/internal/config"
)

// FetchOptions say which stored documents FetchDocuments returns.
type FetchOptions struct {
	// KubeProxy also reads the kube-proxy ConfigMap's
	// KubeProxyConfiguration (none when the ConfigMap does not exist).
	KubeProxy bool
	// DropGenerated leaves out a component configuration that kubeadm
	// generated from its defaults and nobody changed since (its ConfigMap
	// still carries a matching ComponentConfigHashAnnotation), so that the
	// caller's own defaults apply: an upgrade then brings new defaults.
	DropGenerated bool
}

// FetchDocuments reads the configuration documents kubeadm keeps in the
// cluster: the ClusterConfiguration of the kubeadm-config ConfigMap and the
// KubeletConfiguration of kubelet-config (and see FetchOptions).
func FetchDocuments(ctx context.Context, c kubernetes.Interface, timeout time.Duration, o FetchOptions) (*config.Documents, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	kubeadmCM, err := cms.Get(ctx, KubeadmConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's configuration (ConfigMap %s/%s): %w", metav1.NamespaceSystem, KubeadmConfigMap, err)
	}
	docs, err := decodeStored(kubeadmCM, ClusterConfigurationKey)
	if err != nil {
		return nil, err
	}
	if docs.Cluster == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s holds no ClusterConfiguration", metav1.NamespaceSystem, KubeadmConfigMap)
	}
	out := &config.Documents{Source: "the cluster", Cluster: docs.Cluster}

	kubeletCM, err := cms.Get(ctx, KubeletConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the kubelets' configuration (ConfigMap %s/%s): %w", metav1.NamespaceSystem, KubeletConfigMap, err)
	}
	kdocs, err := decodeStored(kubeletCM, KubeletConfigKey)
	if err != nil {
		return nil, err
	}
	if kdocs.Kubelet == nil {
		return nil, fmt.Errorf("ConfigMap %s/%s holds no KubeletConfiguration", metav1.NamespaceSystem, KubeletConfigMap)
	}
	if !(o.DropGenerated && generated(kubeletCM)) {
		out.Kubelet = kdocs.Kubelet
	}

	if o.KubeProxy {
		proxyCM, err := cms.Get(ctx, kubeproxy.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading kube-proxy's configuration (ConfigMap %s/%s): %w", metav1.NamespaceSystem, kubeproxy.Name, err)
		default:
			pdocs, err := decodeStored(proxyCM, kubeproxy.ConfigKey)
			if err != nil {
				return nil, err
			}
			if !(o.DropGenerated && generated(proxyCM)) {
				out.KubeProxy = pdocs.KubeProxy
			}
		}
	}
	return out, nil
}

// decodeStored decodes the configuration document under key of cm.
func decodeStored(cm *corev1.ConfigMap, key string) (*config.Documents, error) {
	data := cm.Data[key]
	if data == "" {
		return nil, fmt.Errorf("ConfigMap %s/%s holds no %q key", cm.Namespace, cm.Name, key)
	}
	docs, err := config.Decode([]byte(data), config.Lenient)
	if err != nil {
		return nil, fmt.Errorf("decoding the configuration in ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return docs, nil
}

// generated reports whether cm still holds what kubeadm generated from its
// defaults: its hash annotation matches its content.
func generated(cm *corev1.ConfigMap) bool {
	want := cm.Annotations[ComponentConfigHashAnnotation]
	if want == "" {
		return false
	}
	plain := &corev1.ConfigMap{Data: cm.Data, BinaryData: cm.BinaryData}
	return Checksum(plain) == want
}
