package kubeproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/addons"
	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
)

// Names of the addon's objects.
const (
	Namespace = metav1.NamespaceSystem
	// Name is the ServiceAccount, ConfigMap, Role, RoleBinding and
	// DaemonSet.
	Name = "kube-proxy"
	// NodeProxierBinding grants the ServiceAccount the built-in
	// system:node-proxier ClusterRole.
	NodeProxierBinding = "kubeadm:node-proxier"
	nodeProxierRole    = "system:node-proxier"
	// BootstrappersGroup holds the bootstrap tokens of joining nodes, which
	// read the ConfigMap through the Role.
	BootstrappersGroup = "system:bootstrappers:kubeadm:default-node-token"

	// ConfigKey and KubeconfigKey are the ConfigMap's keys: the
	// KubeProxyConfiguration and the kubeconfig it names.
	ConfigKey     = "config.conf"
	KubeconfigKey = "kubeconfig.conf"
	// HashAnnotation records a digest of the ConfigMap's data, as kubeadm
	// does for the component configurations it uploads.
	HashAnnotation = "kubeadm.kubernetes.io/component-config.hash"

	// mountDir is where the ConfigMap appears inside the container.
	mountDir = "/var/lib/kube-proxy"
	// Where the Pod's service-account credentials are mounted.
	serviceAccountCA    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
	serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
)

// Addon is the set of objects making up kube-proxy. Build returns them with
// their TypeMeta set, ready to print or apply.
type Addon struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
	ConfigMap          *corev1.ConfigMap
	DaemonSet          *appsv1.DaemonSet
	// Generated is true when kubeadm made the KubeProxyConfiguration from
	// its defaults (the user gave none): only then is the ConfigMap
	// marked with HashAnnotation, so that an upgrade may replace it with
	// newer defaults while keeping a user's own configuration.
	Generated bool
	// PatchDaemonSet, when set, changes the DaemonSet as it is printed
	// and applied: the user's "kubeproxydaemonset" patches.
	PatchDaemonSet func(*appsv1.DaemonSet) (*appsv1.DaemonSet, error)
}

// kubeconfigTemplate is the kubeconfig kube-proxy reaches the API server
// with: the Pod's own service-account token and CA; %s is the server URL.
const kubeconfigTemplate = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: ` + serviceAccountCA + `
    server: %s
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: ` + serviceAccountToken

// Kubeconfig returns the in-cluster kubeconfig for server.
func Kubeconfig(server string) string { return fmt.Sprintf(kubeconfigTemplate, server) }

// balancerKubeconfig is the kubeconfig for the node-local API server load
// balancer (NodeLocalAPILoadBalancer): its loopback address, and the name
// the API server's certificate is checked against, which 127.0.0.1 is not.
func balancerKubeconfig() string {
	return strings.Replace(Kubeconfig(apilb.URL), "    server: ", "    tls-server-name: "+apilb.ServerName+"\n    server: ", 1)
}

// Build returns the kube-proxy objects for the cluster cfg describes: the
// ConfigMap holds cfg's KubeProxyConfiguration and a kubeconfig pointing at
// the control-plane endpoint (or this node's API server when there is
// none); the DaemonSet runs the cluster's kube-proxy image on every Linux
// node.
func Build(cfg *kubeadm.InitConfiguration) (*Addon, error) {
	proxy := cfg.ComponentConfigs.KubeProxy
	if proxy == nil {
		return nil, errors.New("the configuration holds no KubeProxyConfiguration")
	}
	conf, err := yaml.Marshal(proxy)
	if err != nil {
		return nil, fmt.Errorf("writing the KubeProxyConfiguration as YAML: %w", err)
	}
	server, err := kubeconfig.ControlPlaneURL(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("the API server address for kube-proxy: %w", err)
	}
	kc := Kubeconfig(server)
	if apilb.Enabled(cfg.FeatureGates) {
		// Every node runs the balancer: kube-proxy, on the host network,
		// reaches whichever API server is healthy through its own node's.
		kc = balancerKubeconfig()
	}
	return &Addon{
		ServiceAccount:     serviceAccount(),
		ClusterRoleBinding: clusterRoleBinding(),
		Role:               role(),
		RoleBinding:        roleBinding(),
		ConfigMap:          configMap(string(bytes.TrimRight(conf, "\n")), kc),
		DaemonSet:          daemonSet(images.ControlPlane(&cfg.ClusterConfiguration, images.KubeProxy)),
		Generated:          !cfg.ComponentConfigs.KubeProxyUserSupplied,
	}, nil
}

// Manifests renders the objects as a YAML stream, each document preceded
// by "---", in the order upstream kubeadm prints them with
// --print-manifest.
func (a *Addon) Manifests() ([]byte, error) {
	ds, err := a.patchedDaemonSet()
	if err != nil {
		return nil, err
	}
	return addons.Manifests(a.ServiceAccount, a.ClusterRoleBinding, a.Role, a.RoleBinding, a.ConfigMap, ds)
}

// patchedDaemonSet returns the DaemonSet with PatchDaemonSet applied, if
// set.
func (a *Addon) patchedDaemonSet() (*appsv1.DaemonSet, error) {
	if a.PatchDaemonSet == nil {
		return a.DaemonSet, nil
	}
	p, err := a.PatchDaemonSet(a.DaemonSet.DeepCopy())
	if err != nil {
		return nil, fmt.Errorf("patching the %s DaemonSet: %w", Name, err)
	}
	return p, nil
}

// DataHash is the value of HashAnnotation for a ConfigMap: "sha256:" and
// the hex SHA-256 of its Data values, then its BinaryData values, each in
// key order.
func DataHash(cm *corev1.ConfigMap) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		h.Write([]byte(cm.Data[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		h.Write(cm.BinaryData[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   typeMeta("v1", "ServiceAccount"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
	}
}

func clusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: NodeProxierBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodeProxierRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}},
	}
}

func role() *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "Role"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"configmaps"},
			ResourceNames: []string{Name},
			Verbs:         []string{"get"},
		}},
	}
}

func roleBinding() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "RoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: Name},
		// The API server fills in the rbac group for a Group subject.
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: BootstrappersGroup}},
	}
}

func configMap(conf, kubeconfig string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta: typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name,
			Namespace: Namespace,
			Labels:    map[string]string{"app": Name},
		},
		Data: map[string]string{ConfigKey: conf, KubeconfigKey: kubeconfig},
	}
}

func daemonSet(image string) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": Name}
	privileged := true
	fileOrCreate := corev1.HostPathFileOrCreate
	return &appsv1.DaemonSet{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion.String(), "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName: "system-node-critical",
					Containers: []corev1.Container{{
						Name:            Name,
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{
							"/usr/local/bin/kube-proxy",
							"--config=" + mountDir + "/" + ConfigKey,
							"--hostname-override=$(NODE_NAME)",
						},
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						VolumeMounts: []corev1.VolumeMount{
							{Name: Name, MountPath: mountDir},
							{Name: "xtables-lock", MountPath: "/run/xtables.lock"},
							{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
						},
						Env: []corev1.EnvVar{{
							Name:      "NODE_NAME",
							ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
						}},
					}},
					HostNetwork:        true,
					ServiceAccountName: Name,
					Volumes: []corev1.Volume{
						{Name: Name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: Name},
						}}},
						{Name: "xtables-lock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: "/run/xtables.lock", Type: &fileOrCreate,
						}}},
						{Name: "lib-modules", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
							Path: "/lib/modules",
						}}},
					},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
				},
			},
		},
	}
}
