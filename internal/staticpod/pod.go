package staticpod

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// The components kubeadm runs as static Pods; each names its Pod, its
// container, its manifest file (with ".yaml") and its patch target.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// ControlPlaneComponents returns the control-plane components in the order
// kubeadm creates them (etcd is apart).
func ControlPlaneComponents() []string {
	return []string{KubeAPIServer, KubeControllerManager, KubeScheduler}
}

// Fixed places and values the manifests refer to.
const (
	// KubernetesDir holds the kubeconfig files the controller manager and
	// the scheduler mount. Manifests always name the real folder, also in
	// a dry run.
	KubernetesDir = "/etc/kubernetes"

	// AnnotationAPIServerEndpoint records on the kube-apiserver Pod the
	// address and port it advertises.
	AnnotationAPIServerEndpoint = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"
	// AnnotationEtcdClientURLs records on the etcd Pod the client URL it
	// advertises.
	AnnotationEtcdClientURLs = "kubeadm.kubernetes.io/etcd.advertise-client-urls"

	EtcdClientPort        = 2379
	EtcdPeerPort          = 2380
	EtcdMetricsPort       = 2381
	ControllerManagerPort = 10257
	SchedulerPort         = 10259

	// DefaultAuthorizationModes is the API server's --authorization-mode
	// unless the extra arguments say otherwise.
	DefaultAuthorizationModes = "Node,RBAC"

	namespace         = metav1.NamespaceSystem
	priorityClassName = "system-node-critical"
	priority          = int32(2000001000)
	probePortName     = "probe-port"
)

// Node is what the manifests need from the configuration of the node they
// run on.
type Node struct {
	// Name is the node name, which also names the etcd member.
	Name string
	// AdvertiseAddress is what this node's API server advertises (as
	// package config parsed it); etcd advertises the same address.
	AdvertiseAddress netip.Addr
	// BindPort is the port the API server listens on.
	BindPort int32
	// HealthCheckTimeout is how long a component may take to start before
	// its startup probe gives up (timeouts.controlPlaneComponentHealthCheck).
	HealthCheckTimeout time.Duration
	// EtcdInitialCluster, when set, makes the etcd member join an existing
	// cluster: its --initial-cluster ("name=peerURL,..." of every member,
	// this one included) with --initial-cluster-state=existing.
	EtcdInitialCluster string
}

// NodeOf takes the node's part of an init configuration.
func NodeOf(cfg *kubeadm.InitConfiguration) Node {
	n := Node{Name: cfg.NodeRegistration.Name, AdvertiseAddress: cfg.AdvertiseIP, BindPort: cfg.LocalAPIEndpoint.BindPort}
	if cfg.Timeouts != nil && cfg.Timeouts.ControlPlaneComponentHealthCheck != nil {
		n.HealthCheckTimeout = cfg.Timeouts.ControlPlaneComponentHealthCheck.Duration
	}
	return n
}

// Options are the facts about the host and the run that the manifests
// depend on besides the configuration.
type Options struct {
	// HostPathExists reports whether a path exists on the host, following
	// symbolic links. It decides which CA certificate folders are mounted
	// into the API server and the controller manager. nil means none of the
	// optional folders exist.
	HostPathExists func(path string) bool
	// Environ is the environment ("NAME=value" entries, as os.Environ
	// gives) whose proxy variables, those whose name ends in "_PROXY" in
	// any case, are passed to the control-plane containers. etcd gets none.
	Environ []string
	// ExternalCA says the cluster CA's key is not on this machine: the
	// controller manager then signs no certificates.
	ExternalCA bool
	// Warn, when set, receives warnings about the configuration.
	Warn func(format string, args ...any)
}

// HostOptions returns Options that look at the real machine: os.Stat for
// host paths and os.Environ for the environment.
func HostOptions(warn func(format string, args ...any)) Options {
	return Options{
		HostPathExists: func(p string) bool { _, err := os.Stat(p); return err == nil },
		Environ:        os.Environ(),
		Warn:           warn,
	}
}

func (o Options) exists(p string) bool {
	return o.HostPathExists != nil && o.HostPathExists(p)
}

func (o Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(format, args...)
	}
}

// Build returns the Pod of component (one of the component constants).
func Build(component string, c *kubeadm.ClusterConfiguration, n Node, o Options) (*corev1.Pod, error) {
	switch component {
	case Etcd:
		return EtcdPod(c, n, o)
	case KubeAPIServer:
		return APIServerPod(c, n, o)
	case KubeControllerManager:
		return ControllerManagerPod(c, n, o)
	case KubeScheduler:
		return SchedulerPod(c, n, o)
	}
	return nil, fmt.Errorf("no static Pod is known for component %q", component)
}

// componentPod assembles the parts every static Pod of kubeadm shares
// around container, which must have its name, image, command, probes,
// ports, resources, environment and volume mounts set.
func componentPod(container corev1.Container, volumes []corev1.Volume, annotations map[string]string) *corev1.Pod {
	container.ImagePullPolicy = corev1.PullIfNotPresent
	prio := priority
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        container.Name,
			Namespace:   namespace,
			Annotations: annotations,
			Labels:      map[string]string{"component": container.Name, "tier": "control-plane"},
		},
		Spec: corev1.PodSpec{
			Containers:        []corev1.Container{container},
			HostNetwork:       true,
			Priority:          &prio,
			PriorityClassName: priorityClassName,
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
		},
	}
}

// requests returns CPU (and, when set, memory) requests.
func requests(cpu, memory string) corev1.ResourceRequirements {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		r[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return corev1.ResourceRequirements{Requests: r}
}

// probePort is the single named port the probes use.
func probePort(port int32) []corev1.ContainerPort {
	return []corev1.ContainerPort{{Name: probePortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
}

// advertised returns n's advertise address as the manifests write it and
// whether it is an IPv6 address.
func (n Node) advertised() (addr string, ipv6 bool, err error) {
	if !n.AdvertiseAddress.IsValid() {
		return "", false, errors.New("the advertise address is not set")
	}
	return n.AdvertiseAddress.String(), n.AdvertiseAddress.Is6(), nil
}

// loopback is the loopback address of addr's family.
func loopback(ipv6 bool) string {
	if ipv6 {
		return "::1"
	}
	return "127.0.0.1"
}

// hostURL joins scheme, host and port, with brackets around IPv6 hosts.
func hostURL(scheme, host string, port int) string {
	return scheme + "://" + net.JoinHostPort(host, fmt.Sprint(port))
}

// containerEnv merges the proxy variables of environ (when withProxy) and
// extra: by name, extra winning and the last of repeated names winning,
// sorted by name. Field references without an API version get "v1".
func containerEnv(environ []string, withProxy bool, extra []kubeadm.EnvVar) []corev1.EnvVar {
	byName := map[string]corev1.EnvVar{}
	if withProxy {
		for _, kv := range environ {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || value == "" || !strings.HasSuffix(strings.ToUpper(name), "_PROXY") {
				continue
			}
			byName[name] = corev1.EnvVar{Name: name, Value: value}
		}
	}
	for _, e := range extra {
		v := *e.EnvVar.DeepCopy()
		if v.ValueFrom != nil && v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.APIVersion == "" {
			v.ValueFrom.FieldRef.APIVersion = "v1"
		}
		byName[v.Name] = v
	}
	if len(byName) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}
