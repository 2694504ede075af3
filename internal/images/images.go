package images

import (
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Versions of the images whose tags do not follow the Kubernetes version.
const (
	EtcdVersion    = "3.7.0-0"
	CoreDNSVersion = "v1.14.6"
	PauseVersion   = "3.10.2"
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
	repo := c.ImageRepository
	if repo == DefaultRepository {
		repo += "/coredns"
	}
	if c.DNS.ImageRepository != "" {
		repo = c.DNS.ImageRepository
	}
	tag := CoreDNSVersion
	if c.DNS.ImageTag != "" {
		tag = c.DNS.ImageTag
	}
	return Ref(repo, CoreDNS, tag)
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
		imgs = append(imgs, DNS(c))
	}
	imgs = append(imgs, PauseImage(c))
	if c.Etcd.External == nil {
		imgs = append(imgs, EtcdImage(c))
	}
	return imgs
}
