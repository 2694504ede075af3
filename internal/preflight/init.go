package preflight

import (
	"net/netip"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// Well-known ports of the node's components.
const (
	KubeletPort           = 10250
	SchedulerPort         = 10259
	ControllerManagerPort = 10257
	EtcdClientPort        = 2379
	EtcdPeerPort          = 2380
)

// Sysctl files that must hold "1" for Pod networking to work.
const (
	IPv4ForwardingFile = "/proc/sys/net/ipv4/ip_forward"
	IPv6ForwardingFile = "/proc/sys/net/ipv6/conf/default/forwarding"
)

// Executables a node needs in the PATH.
func requiredExecutables() []string { return []string{"losetup", "mount", "cp"} }

// InitChecks returns the checks "kubeadm init" runs after
// IsPrivilegedUser, in upstream kubeadm's order. manifestDir is where the
// static pod manifests will be written.
func InitChecks(h Host, cfg *kubeadm.InitConfiguration, manifestDir string) []Check {
	bindPort := int(cfg.LocalAPIEndpoint.BindPort)
	cpVersion := cfg.KubernetesVersion
	criSocket := cfg.NodeRegistration.CRISocket

	checks := []Check{
		NumCPU(h, ControlPlaneCPUs),
		Mem(h, ControlPlaneMemoryMB),
		KubernetesVersion(cpVersion),
		Firewalld(h, []int{bindPort, KubeletPort}),
		Port(h, bindPort),
		Port(h, SchedulerPort),
		Port(h, ControllerManagerPort),
		FileAvailable(h, filepath.Join(manifestDir, "kube-apiserver.yaml")),
		FileAvailable(h, filepath.Join(manifestDir, "kube-controller-manager.yaml")),
		FileAvailable(h, filepath.Join(manifestDir, "kube-scheduler.yaml")),
		FileAvailable(h, filepath.Join(manifestDir, "etcd.yaml")),
		HTTPProxy(h, cfg.AdvertiseIP),
	}
	for _, p := range cfg.Subnets.Service {
		checks = append(checks, HTTPProxyCIDR(h, p))
	}
	for _, p := range cfg.Subnets.Pod {
		checks = append(checks, HTTPProxyCIDR(h, p))
	}
	if hostprocess.Enabled(cfg.FeatureGates) {
		checks = append(checks, HostProcessChecks(h, &cfg.ClusterConfiguration)...)
	}
	checks = append(checks, nodeChecks(h, criSocket, cfg.NodeRegistration.Name, cpVersion)...)
	addrs := []netip.Addr{cfg.AdvertiseIP}
	for _, p := range slices.Concat(cfg.Subnets.Service, cfg.Subnets.Pod) {
		addrs = append(addrs, p.Addr())
	}
	checks = append(checks, ForwardingChecks(h, addrs...)...)
	if ext := cfg.Etcd.External; ext != nil {
		checks = append(checks, ExternalEtcdVersion(h, ext))
		checks = append(checks, ExternalEtcdClientCertificates(h, ext)...)
	} else {
		checks = append(checks, Port(h, EtcdClientPort), Port(h, EtcdPeerPort))
		if cfg.Etcd.Local != nil && cfg.Etcd.Local.DataDir != "" {
			checks = append(checks, DirAvailable(h, cfg.Etcd.Local.DataDir))
		}
	}
	return checks
}

// nodeChecks are the checks every node runs, init or join, in upstream's
// order: the container runtime, swap, the executables, the kernel, the
// host name, the kubelet (version against kubeletVersion, its service, its
// port).
func nodeChecks(h Host, criSocket, nodeName, kubeletVersion string) []Check {
	kubelet := InstalledKubelet(h)
	checks := []Check{
		ContainerRuntime(h, criSocket),
		ContainerRuntimeVersion(h, criSocket),
		Swap(h),
	}
	for _, exe := range requiredExecutables() {
		checks = append(checks, InPath(h, exe))
	}
	return append(checks,
		SystemVerification(h, kubelet),
		Hostname(h, nodeName),
		KubeletVersion(kubelet, kubeletVersion),
		ServiceEnabled(h, "kubelet"),
		Port(h, KubeletPort),
	)
}

// ForwardingChecks returns the IP forwarding checks for the address
// families in use: IPv4 when any of addrs is IPv4, IPv6 likewise. Addresses
// that are not valid are passed over.
func ForwardingChecks(h Host, addrs ...netip.Addr) []Check {
	var v4, v6 bool
	for _, a := range addrs {
		v4 = v4 || a.Is4()
		v6 = v6 || a.Is6()
	}
	var checks []Check
	if v4 {
		checks = append(checks, FileContent(h, IPv4ForwardingFile, "1"))
	}
	if v6 {
		checks = append(checks, FileContent(h, IPv6ForwardingFile, "1"))
	}
	return checks
}

// InitImagePull returns the ImagePull check of "kubeadm init": every image
// of the cluster, with the node's pull policy and seriality.
func InitImagePull(h Host, cfg *kubeadm.InitConfiguration, warnf func(string, ...any)) Check {
	policy := cfg.NodeRegistration.ImagePullPolicy
	if policy == "" {
		policy = corev1.PullIfNotPresent
	}
	serial := cfg.NodeRegistration.ImagePullSerial == nil || *cfg.NodeRegistration.ImagePullSerial
	list := images.List(&cfg.ClusterConfiguration)
	if hostprocess.Enabled(cfg.FeatureGates) {
		// The control plane's programs are on the host, not in images.
		list = images.WithoutControlPlane(&cfg.ClusterConfiguration, list)
	}
	return ImagePull(h, cfg.NodeRegistration.CRISocket, ImagePullOptions{
		Images:       list,
		Policy:       policy,
		Serial:       serial,
		SandboxImage: images.PauseImage(&cfg.ClusterConfiguration),
		Warnf:        warnf,
	})
}
