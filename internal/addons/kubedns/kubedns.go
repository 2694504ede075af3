package kubedns

import (
	"fmt"
	"net/netip"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubeadm-go/kubeadm/internal/addons"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// Names of the addon's objects and the label that ties them together.
const (
	Namespace = metav1.NamespaceSystem
	// Name is the ServiceAccount, ConfigMap, Deployment and Service.
	Name = "kube-dns"
	// ServiceName is the DNS Service, shared with CoreDNS.
	ServiceName = "kube-dns"
	// ClusterRoleName is the role the API server's bootstrap policy binds
	// to the kube-system/kube-dns ServiceAccount.
	ClusterRoleName = "system:kube-dns"
	// LabelKey and LabelValue select the DNS Pods, as CoreDNS's.
	LabelKey   = "k8s-app"
	LabelValue = "kube-dns"
	// DefaultReplicas is the Deployment's size in a new cluster, as
	// CoreDNS's (kubeadm v1.12 left it at 1).
	DefaultReplicas = 2

	configVolume = "kube-dns-config"
	// Ports inside the Pod: kubedns answers on 10053 and serves metrics on
	// 10055; dnsmasq answers on 53 and forwards the cluster's zones to
	// kubedns; sidecar probes both and serves health and metrics on 10054.
	kubednsPort = 10053
	metricsPort = 10055
	sidecarPort = 10054
)

// Addon is the set of objects making up kube-dns, with their TypeMeta
// set, ready to print or apply.
type Addon struct {
	ServiceAccount *corev1.ServiceAccount
	ConfigMap      *corev1.ConfigMap
	Deployment     *appsv1.Deployment
	Service        *corev1.Service
}

// Build returns the kube-dns objects for a cluster: the images from its
// DNS image settings, the zones of its DNS domain, and the Service on the
// tenth address of its (first) service subnet.
func Build(c *kubeadm.ClusterConfiguration) (*Addon, error) {
	dnsIP, err := config.DNSServiceIP(c.Subnets.Service)
	if err != nil {
		return nil, fmt.Errorf("the kube-dns Service address in %q: %w", c.Networking.ServiceSubnet, err)
	}
	return &Addon{
		ServiceAccount: serviceAccount(),
		ConfigMap:      configMap(),
		Deployment:     deployment(c, loopback(dnsIP), DefaultReplicas),
		Service:        service(dnsIP.String()),
	}, nil
}

// Manifests renders the objects as a YAML stream, each document preceded
// by "---": Deployment, ConfigMap, Service, ServiceAccount (the order of
// CoreDNS's, without its RBAC objects).
func (a *Addon) Manifests() ([]byte, error) {
	return addons.Manifests(a.Deployment, a.ConfigMap, a.Service, a.ServiceAccount)
}

// loopback is the address the containers of a Pod reach one another on:
// of the family of the DNS Service's address.
func loopback(dnsIP netip.Addr) netip.Addr {
	if dnsIP.Is6() {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
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

// configMap is the empty configuration of a new cluster: kubedns and the
// dnsmasq nanny read stubDomains and upstreamNameservers from it, once a
// user adds them.
func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
	}
}

// httpProbe checks path on port, after a minute, every ten seconds, five
// failures in a row restarting the container.
func httpProbe(path string, port int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
		}},
		InitialDelaySeconds: 60,
		TimeoutSeconds:      5,
		SuccessThreshold:    1,
		FailureThreshold:    5,
	}
}

func requests(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// deployment is the kube-dns Deployment: lo is the Pod's loopback address
// (127.0.0.1, or ::1 in an IPv6 cluster), where dnsmasq finds kubedns and
// sidecar probes both.
func deployment(c *kubeadm.ClusterConfiguration, lo netip.Addr, replicas int32) *appsv1.Deployment {
	domain := c.Networking.DNSDomain
	// dnsmasq's "--server" takes the address bare, the sidecar's probe
	// as host:port.
	forward := func(zone string) string { return fmt.Sprintf("--server=/%s/%s#%d", zone, lo, kubednsPort) }
	probe := func(name string, port int) string {
		return fmt.Sprintf("--probe=%s,%s,kubernetes.default.svc.%s,5,SRV", name, netip.AddrPortFrom(lo, uint16(port)), domain)
	}
	maxSurge := intstr.FromString("10%")
	maxUnavailable := intstr.FromInt32(0)
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(appsv1.SchemeGroupVersion.String(), "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: selectorLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			// A new Pod is Ready before an old one goes.
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
			},
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selectorLabels()},
				Spec: corev1.PodSpec{
					PriorityClassName:  "system-cluster-critical",
					ServiceAccountName: Name,
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
					},
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
					Volumes: []corev1.Volume{{
						Name: configVolume,
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: Name},
							Optional:             ptr.To(true),
						}},
					}},
					Containers: []corev1.Container{
						{
							Name:            "kubedns",
							Image:           images.KubeDNS(c, images.KubeDNSKubeDNS),
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args: []string{
								"--domain=" + domain + ".",
								fmt.Sprintf("--dns-port=%d", kubednsPort),
								"--config-dir=/kube-dns-config",
								"--v=2",
							},
							Env: []corev1.EnvVar{{Name: "PROMETHEUS_PORT", Value: fmt.Sprint(metricsPort)}},
							Ports: []corev1.ContainerPort{
								{Name: "dns-local", ContainerPort: kubednsPort, Protocol: corev1.ProtocolUDP},
								{Name: "dns-tcp-local", ContainerPort: kubednsPort, Protocol: corev1.ProtocolTCP},
								{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
							},
							Resources: corev1.ResourceRequirements{
								Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
								Requests: requests("100m", "70Mi"),
							},
							LivenessProbe: httpProbe("/healthcheck/kubedns", sidecarPort),
							// kubedns answers /readiness once it has read the
							// cluster's Services.
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
									Path: "/readiness", Port: intstr.FromInt32(8081), Scheme: corev1.URISchemeHTTP,
								}},
								InitialDelaySeconds: 3,
								TimeoutSeconds:      5,
							},
							VolumeMounts: []corev1.VolumeMount{{Name: configVolume, MountPath: "/kube-dns-config"}},
						},
						{
							Name:            "dnsmasq",
							Image:           images.KubeDNS(c, images.KubeDNSDnsmasq),
							ImagePullPolicy: corev1.PullIfNotPresent,
							// The nanny's own flags, then dnsmasq's after "--".
							Args: []string{
								"-v=2",
								"-logtostderr",
								"-configDir=/etc/k8s/dns/dnsmasq-nanny",
								"-restartDnsmasq=true",
								"--",
								"-k",
								"--cache-size=1000",
								"--no-negcache",
								"--log-facility=-",
								forward(domain),
								forward("in-addr.arpa"),
								forward("ip6.arpa"),
							},
							Ports: []corev1.ContainerPort{
								{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
								{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							},
							Resources:     corev1.ResourceRequirements{Requests: requests("150m", "20Mi")},
							LivenessProbe: httpProbe("/healthcheck/dnsmasq", sidecarPort),
							VolumeMounts:  []corev1.VolumeMount{{Name: configVolume, MountPath: "/etc/k8s/dns/dnsmasq-nanny"}},
						},
						{
							Name:            "sidecar",
							Image:           images.KubeDNS(c, images.KubeDNSSidecar),
							ImagePullPolicy: corev1.PullIfNotPresent,
							// Without v1.12's --logtostderr: today's sidecar logs
							// to stderr and refuses the flag.
							Args:          []string{"--v=2", probe("kubedns", kubednsPort), probe("dnsmasq", 53)},
							Ports:         []corev1.ContainerPort{{Name: "metrics", ContainerPort: sidecarPort, Protocol: corev1.ProtocolTCP}},
							Resources:     corev1.ResourceRequirements{Requests: requests("10m", "20Mi")},
							LivenessProbe: httpProbe("/metrics", sidecarPort),
						},
					},
					// The DNS server resolves through the node, not itself.
					DNSPolicy: corev1.DNSDefault,
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
				"kubernetes.io/name":            "KubeDNS",
			},
			// Makes the update unconditional (see apiclient.ReplaceService).
			ResourceVersion: "0",
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
			Selector: selectorLabels(),
		},
	}
}
