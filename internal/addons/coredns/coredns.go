package coredns

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeadm-go/kubeadm/internal/addons"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// Names of the addon's objects and the label that ties them together.
const (
	Namespace       = metav1.NamespaceSystem
	Name            = "coredns" // ServiceAccount, ConfigMap, Deployment
	ServiceName     = "kube-dns"
	ClusterRoleName = "system:coredns"
	// LabelKey and LabelValue select the DNS Pods; the Service and the
	// Deployment's selector use them, as the kube-dns addon did before.
	LabelKey   = "k8s-app"
	LabelValue = "kube-dns"
	// CorefileKey is the ConfigMap key holding the Corefile.
	CorefileKey = "Corefile"
	// DefaultReplicas is the Deployment's size in a new cluster.
	DefaultReplicas = 2

	configVolume = "config-volume"
	configDir    = "/etc/coredns"
	metricsPort  = 9153
)

// Addon is the set of objects making up CoreDNS. Build returns them with
// their TypeMeta set, ready to print or apply.
type Addon struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	ConfigMap          *corev1.ConfigMap
	Deployment         *appsv1.Deployment
	Service            *corev1.Service

	// PatchDeployment, when set, changes the Deployment as it is printed
	// or applied (after Apply has taken over the replica count of the
	// existing one): the user's "corednsdeployment" patches.
	PatchDeployment func(*appsv1.Deployment) (*appsv1.Deployment, error)

	// dnsDomain tells the default Corefile from a customized one.
	dnsDomain string
}

// corefileTemplate is the Corefile of a new cluster; %[1]s is the cluster's
// DNS domain.
const corefileTemplate = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes %[1]s in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success %[1]s
       disable denial %[1]s
    }
    loop
    reload
    loadbalance
}
`

// Corefile returns the CoreDNS configuration of a new cluster whose
// Services live under dnsDomain: the cluster zone and reverse zones are
// answered from the API, everything else is forwarded to the node's
// resolvers.
func Corefile(dnsDomain string) string {
	return fmt.Sprintf(corefileTemplate, dnsDomain)
}

// Build returns the CoreDNS objects for a cluster: the image from the
// cluster's DNS image settings, the Corefile for its DNS domain and the
// Service on the tenth address of its (first) service subnet.
func Build(c *kubeadm.ClusterConfiguration) (*Addon, error) {
	dnsIP, err := config.DNSServiceIP(c.Subnets.Service)
	if err != nil {
		return nil, fmt.Errorf("the CoreDNS Service address in %q: %w", c.Networking.ServiceSubnet, err)
	}
	return &Addon{
		ServiceAccount:     serviceAccount(),
		ClusterRole:        clusterRole(),
		ClusterRoleBinding: clusterRoleBinding(),
		ConfigMap:          configMap(Corefile(c.Networking.DNSDomain)),
		Deployment:         deployment(images.DNS(c), DefaultReplicas),
		Service:            service(dnsIP.String()),
		dnsDomain:          c.Networking.DNSDomain,
	}, nil
}

// Manifests renders the objects as a YAML stream, each document preceded
// by "---", in the order upstream kubeadm prints them with
// --print-manifest.
func (a *Addon) Manifests() ([]byte, error) {
	deploy, err := a.patchedDeployment(a.Deployment)
	if err != nil {
		return nil, err
	}
	return addons.Manifests(deploy, a.ConfigMap, a.Service, a.ClusterRole, a.ClusterRoleBinding, a.ServiceAccount)
}

// patchedDeployment returns d with PatchDeployment applied, if set.
func (a *Addon) patchedDeployment(d *appsv1.Deployment) (*appsv1.Deployment, error) {
	if a.PatchDeployment == nil {
		return d, nil
	}
	p, err := a.PatchDeployment(d)
	if err != nil {
		return nil, fmt.Errorf("patching the %s Deployment: %w", Name, err)
	}
	return p, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func selectorLabels() map[string]string { return map[string]string{LabelKey: LabelValue} }

func serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   typeMeta("v1", "ServiceAccount"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
	}
}

func clusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{""},
				Resources: []string{"endpoints", "services", "pods", "namespaces"},
				Verbs:     []string{"list", "watch"},
			},
			{
				APIGroups: []string{"discovery.k8s.io"},
				Resources: []string{"endpointslices"},
				Verbs:     []string{"list", "watch"},
			},
		},
	}
}

func clusterRoleBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
		ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: Name, Namespace: Namespace}},
	}
}

func configMap(corefile string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Data:       map[string]string{CorefileKey: corefile},
	}
}

func deployment(image string, replicas int32) *appsv1.Deployment {
	maxUnavailable := intstr.FromInt32(1)
	f := false
	t := true
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion.String(), "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: selectorLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable},
			},
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selectorLabels()},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: Name,
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
									Key: LabelKey, Operator: metav1.LabelSelectorOpIn, Values: []string{LabelValue},
								}}},
								TopologyKey: corev1.LabelHostname,
							},
						}},
					}},
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
					},
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
					Containers: []corev1.Container{{
						Name:            Name,
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("100m"),
								corev1.ResourceMemory: resource.MustParse("70Mi"),
							},
						},
						Args:         []string{"-conf", configDir + "/" + CorefileKey},
						VolumeMounts: []corev1.VolumeMount{{Name: configVolume, MountPath: configDir, ReadOnly: true}},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
							{Name: "liveness-probe", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
							{Name: "readiness-probe", ContainerPort: 8181, Protocol: corev1.ProtocolTCP},
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/health", Port: intstr.FromString("liveness-probe"), Scheme: corev1.URISchemeHTTP,
							}},
							InitialDelaySeconds: 60,
							TimeoutSeconds:      5,
							SuccessThreshold:    1,
							FailureThreshold:    5,
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/ready", Port: intstr.FromString("readiness-probe"), Scheme: corev1.URISchemeHTTP,
							}},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: &f,
							Capabilities: &corev1.Capabilities{
								Add:  []corev1.Capability{"NET_BIND_SERVICE"},
								Drop: []corev1.Capability{"ALL"},
							},
							ReadOnlyRootFilesystem: &t,
						},
					}},
					// The DNS server resolves through the node, not itself.
					DNSPolicy: corev1.DNSDefault,
					Volumes: []corev1.Volume{{
						Name: configVolume,
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: Name},
							Items:                []corev1.KeyToPath{{Key: CorefileKey, Path: CorefileKey}},
						}},
					}},
				},
			},
		},
	}
}

func service(clusterIP string) *corev1.Service {
	return &corev1.Service{
		TypeMeta: typeMeta("v1", "Service"),
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceName,
			Namespace: Namespace,
			Labels: map[string]string{
				LabelKey:                        LabelValue,
				"kubernetes.io/cluster-service": "true",
				"kubernetes.io/name":            "CoreDNS",
			},
			Annotations: map[string]string{
				"prometheus.io/port":   fmt.Sprint(metricsPort),
				"prometheus.io/scrape": "true",
			},
			// A Service cannot be replaced without a resourceVersion; "0"
			// makes the update unconditional, as it is for the other kinds.
			ResourceVersion: "0",
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				{Name: "metrics", Port: metricsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(metricsPort)},
			},
			Selector: selectorLabels(),
		},
	}
}

// customized reports whether an existing Corefile was written by someone
// else than kubeadm and must be kept: it is not empty, holds at least one
// server block, and is not the default Corefile for dnsDomain (blank lines
// and indentation aside).
func customized(existing, dnsDomain string) bool {
	if strings.TrimSpace(existing) == "" || !strings.Contains(existing, "{") {
		return false
	}
	return normalize(existing) != normalize(Corefile(dnsDomain))
}

func normalize(corefile string) string {
	var lines []string
	for _, l := range strings.Split(corefile, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
