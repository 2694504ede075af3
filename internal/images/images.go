package images

import (
	"slices"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Versions of the images whose tags do not follow the Kubernetes version.
const (
	EtcdVersion    = "3.7.0-0"
	CoreDNSVersion = "v1.14.6"
	PauseVersion   = "3.10.2"
	// KubeDNSVersion is the tag of the kube-dns addon's three images: the
	// kubernetes/dns release the test bed builds them from.
	KubeDNSVersion = "1.26.7"
)

// Image names as they appear after the repository.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	KubeProxy             = "kube-proxy"
	CoreDNS               = "coredns"
	Pause                 = "pause"
	Etcd                  = "etcd"
	// The kube-dns addon's images, one per container.
	KubeDNSKubeDNS = "k8s-dns-kube-dns"
	KubeDNSDnsmasq = "k8s-dns-dnsmasq-nanny"
	KubeDNSSidecar = "k8s-dns-sidecar"

	// DefaultRepository is the registry images come from by default.
	DefaultRepository = "registry.k8s.io"
	// CIRepository serves images of CI builds ("ci/" versions).
	CIRepository = "gcr.io/k8s-staging-ci-images"
)

// Ref builds "repository/name:tag".
func Ref(repository, name, tag string) string {
	return repository + "/" + name + ":" + tag
}

// KubernetesTag turns a Kubernetes version into an image tag: "+" is not
// allowed in tags, so CI versions use "_" instead.
func KubernetesTag(version string) string {
	return strings.ReplaceAll(version, "+", "_")
}

// ControlPlane returns the image of a control-plane component or kube-proxy.
func ControlPlane(c *kubeadm.ClusterConfiguration, component string) string {
	repo := c.ImageRepository
	if c.CIImageRepository != "" {
		repo = c.CIImageRepository
	}
	return Ref(repo, component, KubernetesTag(c.KubernetesVersion))
}

// DNS returns the CoreDNS image. In the default registry CoreDNS lives
// under an extra "coredns/" path; in any other repository it does not.
func DNS(c *kubeadm.ClusterConfiguration) string {
	return dnsImage(c, "coredns", CoreDNS, CoreDNSVersion)
}

// KubeDNS returns the image of one of the kube-dns addon's containers
// (KubeDNSKubeDNS, KubeDNSDnsmasq, KubeDNSSidecar). In the default registry
// they live under an extra "dns/" path; in any other repository they do
// not. dns.imageRepository and dns.imageTag override, as for CoreDNS.
func KubeDNS(c *kubeadm.ClusterConfiguration, name string) string {
	return dnsImage(c, "dns", name, KubeDNSVersion)
}

// dnsImage is a DNS addon's image name: under imageRepository, plus the
// extra path defaultPath in the default registry, unless dns.imageRepository
// names another; tagged dns.imageTag, or tag.
func dnsImage(c *kubeadm.ClusterConfiguration, defaultPath, name, tag string) string {
	repo := c.ImageRepository
	if repo == DefaultRepository {
		repo += "/" + defaultPath
	}
	if c.DNS.ImageRepository != "" {
		repo = c.DNS.ImageRepository
	}
	if c.DNS.ImageTag != "" {
		tag = c.DNS.ImageTag
	}
	return Ref(repo, name, tag)
}

// DNSImages returns the images of the cluster's DNS addon: CoreDNS's, or
// kube-dns's three in kubeadm v1.13's order (kube-dns, sidecar,
// dnsmasq-nanny).
func DNSImages(c *kubeadm.ClusterConfiguration) []string {
	if c.DNSAddon() == kubeadm.KubeDNS {
		return []string{KubeDNS(c, KubeDNSKubeDNS), KubeDNS(c, KubeDNSSidecar), KubeDNS(c, KubeDNSDnsmasq)}
	}
	return []string{DNS(c)}
}

// PauseImage returns the pod sandbox image.
func PauseImage(c *kubeadm.ClusterConfiguration) string {
	return Ref(c.ImageRepository, Pause, PauseVersion)
}

// EtcdImage returns the image of the local etcd member.
func EtcdImage(c *kubeadm.ClusterConfiguration) string {
	repo, tag := c.ImageRepository, EtcdVersion
	if l := c.Etcd.Local; l != nil {
		if l.ImageRepository != "" {
			repo = l.ImageRepository
		}
		if l.ImageTag != "" {
			tag = l.ImageTag
		}
	}
	return Ref(repo, Etcd, tag)
}

// WithoutControlPlane drops from list the images of etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler: a control plane of host
// processes runs programs installed on the node, not these images.
func WithoutControlPlane(c *kubeadm.ClusterConfiguration, list []string) []string {
	host := map[string]bool{EtcdImage(c): true}
	for _, comp := range []string{KubeAPIServer, KubeControllerManager, KubeScheduler} {
		host[ControlPlane(c, comp)] = true
	}
	return slices.DeleteFunc(slices.Clone(list), func(i string) bool { return host[i] })
}

// List returns every image the cluster needs, in kubeadm's order.
func List(c *kubeadm.ClusterConfiguration) []string {
	imgs := []string{
		ControlPlane(c, KubeAPIServer),
		ControlPlane(c, KubeControllerManager),
		ControlPlane(c, KubeScheduler),
	}
	if !c.Proxy.Disabled {
		imgs = append(imgs, ControlPlane(c, KubeProxy))
	}
	if !c.DNS.Disabled {
		imgs = append(imgs, DNSImages(c)...)
	}
	imgs = append(imgs, PauseImage(c))
	if c.Etcd.External == nil {
		imgs = append(imgs, EtcdImage(c))
	}
	return imgs
}
