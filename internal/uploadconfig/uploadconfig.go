package uploadconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
)

// Names, keys and groups, as upstream kubeadm uses them.
const (
	// KubeadmConfigMap holds the ClusterConfiguration under
	// ClusterConfigurationKey.
	KubeadmConfigMap        = "kubeadm-config"
	ClusterConfigurationKey = "ClusterConfiguration"
	// KubeadmConfigRole names the Role and RoleBinding that let nodes read
	// KubeadmConfigMap.
	KubeadmConfigRole = "kubeadm:nodes-kubeadm-config"

	// KubeletConfigMap holds the KubeletConfiguration under
	// KubeletConfigKey.
	KubeletConfigMap = "kubelet-config"
	KubeletConfigKey = "kubelet"
	// KubeletConfigRole names the Role and RoleBinding that let nodes read
	// KubeletConfigMap.
	KubeletConfigRole = "kubeadm:kubelet-config"

	// ComponentConfigHashAnnotation marks a component configuration that
	// kubeadm generated from its defaults (the user gave none) with the
	// checksum of its ConfigMap's content (see Checksum).
	ComponentConfigHashAnnotation = "kubeadm.kubernetes.io/component-config.hash"

	// NodeBootstrapTokenGroup is the group of kubeadm's bootstrap tokens;
	// NodesGroup that of the kubelets' own credentials.
	NodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
	NodesGroup              = "system:nodes"
)

// KubeadmConfig returns the kubeadm-config ConfigMap: the v1beta4
// ClusterConfiguration document of cfg. The component configurations are
// not part of it; they have ConfigMaps of their own.
func KubeadmConfig(cfg *kubeadm.ClusterConfiguration) (*corev1.ConfigMap, error) {
	doc, err := yaml.Marshal(config.ClusterToV1beta4(cfg))
	if err != nil {
		return nil, fmt.Errorf("encoding the ClusterConfiguration for ConfigMap %s/%s: %w", metav1.NamespaceSystem, KubeadmConfigMap, err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: KubeadmConfigMap, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{ClusterConfigurationKey: string(doc)},
	}, nil
}

// KubeletConfig returns the kubelet-config ConfigMap: cfg's
// KubeletConfiguration as the cluster shares it (no node-local settings,
// patches or resolvConf detection). When kubeadm generated that
// configuration from defaults, the ConfigMap carries
// ComponentConfigHashAnnotation.
func KubeletConfig(cfg *kubeadm.ClusterConfiguration) (*corev1.ConfigMap, error) {
	k := cfg.ComponentConfigs.Kubelet
	if k == nil {
		return nil, errors.New("the configuration holds no KubeletConfiguration to store")
	}
	doc, err := yaml.Marshal(kubeadm.KubeletDocument(k))
	if err != nil {
		return nil, fmt.Errorf("encoding the KubeletConfiguration for ConfigMap %s/%s: %w", metav1.NamespaceSystem, KubeletConfigMap, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletConfigMap, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{KubeletConfigKey: string(doc)},
	}
	if !cfg.ComponentConfigs.KubeletUserSupplied {
		cm.Annotations = map[string]string{ComponentConfigHashAnnotation: Checksum(cm)}
	}
	return cm, nil
}

// Checksum is "sha256:" and the hex SHA-256 of a ConfigMap's content: its
// data values in key order, then its binary data values in key order. For
// the one-key component-config ConfigMaps that is the SHA-256 of the
// document, as upstream kubeadm computes it.
func Checksum(cm *corev1.ConfigMap) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		h.Write([]byte(cm.Data[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		h.Write(cm.BinaryData[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// KubeadmConfigRBAC returns the Role that may read KubeadmConfigMap and the
// RoleBinding granting it to bootstrap tokens and nodes.
func KubeadmConfigRBAC() (*rbacv1.Role, *rbacv1.RoleBinding) {
	return readConfigMapRBAC(KubeadmConfigRole, KubeadmConfigMap, NodeBootstrapTokenGroup, NodesGroup)
}

// KubeletConfigRBAC returns the Role that may read KubeletConfigMap and the
// RoleBinding granting it to nodes and bootstrap tokens.
func KubeletConfigRBAC() (*rbacv1.Role, *rbacv1.RoleBinding) {
	return readConfigMapRBAC(KubeletConfigRole, KubeletConfigMap, NodesGroup, NodeBootstrapTokenGroup)
}

// readConfigMapRBAC grants groups (in that order, as upstream lists them)
// "get" on one ConfigMap of kube-system.
func readConfigMapRBAC(name, configMap string, groups ...string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem}
	subjects := make([]rbacv1.Subject, 0, len(groups))
	for _, g := range groups {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: g})
	}
	return &rbacv1.Role{
			ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{{
				APIGroups:     []string{""},
				Resources:     []string{"configmaps"},
				ResourceNames: []string{configMap},
				Verbs:         []string{"get"},
			}},
		}, &rbacv1.RoleBinding{
			ObjectMeta: meta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subjects,
		}
}

// UploadKubeadmConfig creates or replaces the kubeadm-config ConfigMap and
// its Role and RoleBinding. Idempotent.
func UploadKubeadmConfig(ctx context.Context, c kubernetes.Interface, cfg *kubeadm.ClusterConfiguration) error {
	cm, err := KubeadmConfig(cfg)
	if err != nil {
		return err
	}
	role, binding := KubeadmConfigRBAC()
	return store(ctx, c, cm, role, binding)
}

// UploadKubeletConfig creates or replaces the kubelet-config ConfigMap and
// its Role and RoleBinding. Idempotent.
func UploadKubeletConfig(ctx context.Context, c kubernetes.Interface, cfg *kubeadm.ClusterConfiguration) error {
	cm, err := KubeletConfig(cfg)
	if err != nil {
		return err
	}
	role, binding := KubeletConfigRBAC()
	return store(ctx, c, cm, role, binding)
}

func store(ctx context.Context, c kubernetes.Interface, cm *corev1.ConfigMap, role *rbacv1.Role, binding *rbacv1.RoleBinding) error {
	ns := metav1.NamespaceSystem
	return apiclient.WriteTogether(c, "storing",
		apiclient.Write{What: "ConfigMap " + ns + "/" + cm.Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps(ns), cm)
		}},
		apiclient.Write{What: "Role " + ns + "/" + role.Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(ns), role)
		}},
		apiclient.Write{What: "RoleBinding " + ns + "/" + binding.Name, Do: func() error {
			return apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(ns), binding)
		}},
	)
}
