package bootstraptoken

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
)

// ClusterInfoName is the public ConfigMap in kube-public that joining nodes
// read; the controller manager's bootstrap signer adds one
// "jws-kubeconfig-<token-id>" signature per signing token to it.
const ClusterInfoName = bootstrapapi.ConfigMapClusterInfo

// CurrentCluster returns the cluster of the kubeconfig file's current
// context, with the CA certificates it names by path read into
// CertificateAuthorityData.
func CurrentCluster(kubeconfigPath string) (*clientcmdapi.Cluster, error) {
	cfg, err := kubeconfig.Load(kubeconfigPath)
	if err != nil {
		return nil, err // names the file already
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil, fmt.Errorf("the kubeconfig file %s has no current context", kubeconfigPath)
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("the kubeconfig file %s has no cluster %q, which its current context %q uses", kubeconfigPath, ctx.Cluster, cfg.CurrentContext)
	}
	c := *cluster
	c.LocationOfOrigin = ""
	if len(c.CertificateAuthorityData) == 0 && c.CertificateAuthority != "" {
		data, err := boundedread.ReadFile(c.CertificateAuthority, boundedread.MaxFile)
		if err != nil {
			return nil, fmt.Errorf("reading the CA certificate that the kubeconfig file %s names: %w", kubeconfigPath, err)
		}
		c.CertificateAuthorityData = data
	}
	c.CertificateAuthority = ""
	if len(c.CertificateAuthorityData) == 0 {
		return nil, fmt.Errorf("the kubeconfig file %s holds no CA certificate for cluster %q", kubeconfigPath, ctx.Cluster)
	}
	if c.Server == "" {
		return nil, fmt.Errorf("the kubeconfig file %s has no server for cluster %q", kubeconfigPath, ctx.Cluster)
	}
	return &c, nil
}

// ClusterInfo returns the kube-public/cluster-info ConfigMap for the
// cluster of the kubeconfig file's current context: under the key
// "kubeconfig", a kubeconfig holding just that cluster (unnamed, with the
// CA certificates embedded) and no user or context.
func ClusterInfo(kubeconfigPath string) (*corev1.ConfigMap, error) {
	cluster, err := CurrentCluster(kubeconfigPath)
	if err != nil {
		return nil, err
	}
	data, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"": cluster}})
	if err != nil {
		return nil, fmt.Errorf("encoding the cluster-info kubeconfig: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoName, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(data)},
	}, nil
}

// CreateClusterInfo creates cluster-info, or replaces it (dropping the
// signatures, which the bootstrap signer adds back within seconds), then
// the Role and RoleBinding that let anonymous users get it (the three
// together, see apiclient.Together). Running it again converges.
func CreateClusterInfo(ctx context.Context, c kubernetes.Interface, cm *corev1.ConfigMap) error {
	if cm == nil || cm.Name != ClusterInfoName || cm.Namespace != metav1.NamespacePublic {
		return errors.New("CreateClusterInfo needs the kube-public/cluster-info ConfigMap")
	}
	return apiclient.FirstError(apiclient.Together(c,
		func() error { return apply(ctx, c.CoreV1().ConfigMaps(metav1.NamespacePublic), "ConfigMap", cm) },
		func() error {
			return apply(ctx, c.RbacV1().Roles(metav1.NamespacePublic), "Role", ClusterInfoReaderRole())
		},
		func() error {
			return apply(ctx, c.RbacV1().RoleBindings(metav1.NamespacePublic), "RoleBinding", ClusterInfoReaderBinding())
		},
	))
}
