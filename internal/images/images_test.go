package images

import (
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

func cluster(mod func(*kubeadm.ClusterConfiguration)) *kubeadm.ClusterConfiguration {
	c := &kubeadm.ClusterConfiguration{
		KubernetesVersion: "v1.36.3",
		ImageRepository:   DefaultRepository,
		Etcd:              kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestList(t *testing.T) {
	cases := map[string]struct {
		mod  func(*kubeadm.ClusterConfiguration)
		want []string
	}{
		"defaults": {nil, []string{
			"registry.k8s.io/kube-apiserver:v1.36.3", "registry.k8s.io/kube-controller-manager:v1.36.3",
			"registry.k8s.io/kube-scheduler:v1.36.3", "registry.k8s.io/kube-proxy:v1.36.3",
			"registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.7.0-0"}},
		"custom repository drops the coredns sub-path": {func(c *kubeadm.ClusterConfiguration) { c.ImageRepository = "r.example/k" }, []string{
			"r.example/k/kube-apiserver:v1.36.3", "r.example/k/kube-controller-manager:v1.36.3",
			"r.example/k/kube-scheduler:v1.36.3", "r.example/k/kube-proxy:v1.36.3",
			"r.example/k/coredns:v1.14.6", "r.example/k/pause:3.10.2", "r.example/k/etcd:3.7.0-0"}},
		"add-ons disabled and external etcd": {func(c *kubeadm.ClusterConfiguration) {
			c.DNS.Disabled, c.Proxy.Disabled = true, true
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://e:2379"}}}
		}, []string{"registry.k8s.io/kube-apiserver:v1.36.3", "registry.k8s.io/kube-controller-manager:v1.36.3",
			"registry.k8s.io/kube-scheduler:v1.36.3", "registry.k8s.io/pause:3.10.2"}},
		"overrides": {func(c *kubeadm.ClusterConfiguration) {
			c.DNS.ImageRepository, c.DNS.ImageTag = "dns.example", "v9"
			c.Etcd.Local.ImageRepository, c.Etcd.Local.ImageTag = "etcd.example", "3.9.9-0"
		}, []string{"registry.k8s.io/kube-apiserver:v1.36.3", "registry.k8s.io/kube-controller-manager:v1.36.3",
			"registry.k8s.io/kube-scheduler:v1.36.3", "registry.k8s.io/kube-proxy:v1.36.3",
			"dns.example/coredns:v9", "registry.k8s.io/pause:3.10.2", "etcd.example/etcd:3.9.9-0"}},
		"kube-dns (CoreDNS=false) under the default registry's dns/ path": {func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"CoreDNS": false}
		}, []string{"registry.k8s.io/kube-apiserver:v1.36.3", "registry.k8s.io/kube-controller-manager:v1.36.3",
			"registry.k8s.io/kube-scheduler:v1.36.3", "registry.k8s.io/kube-proxy:v1.36.3",
			"registry.k8s.io/dns/k8s-dns-kube-dns:1.26.7", "registry.k8s.io/dns/k8s-dns-sidecar:1.26.7",
			"registry.k8s.io/dns/k8s-dns-dnsmasq-nanny:1.26.7", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:" + EtcdVersion}},
		"kube-dns in a custom repository, with overrides": {func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"CoreDNS": false}
			c.ImageRepository, c.DNS.ImageTag = "r.example/k", "1.99.0"
			c.DNS.Disabled = false
		}, []string{"r.example/k/kube-apiserver:v1.36.3", "r.example/k/kube-controller-manager:v1.36.3",
			"r.example/k/kube-scheduler:v1.36.3", "r.example/k/kube-proxy:v1.36.3",
			"r.example/k/k8s-dns-kube-dns:1.99.0", "r.example/k/k8s-dns-sidecar:1.99.0",
			"r.example/k/k8s-dns-dnsmasq-nanny:1.99.0", "r.example/k/pause:3.10.2", "r.example/k/etcd:" + EtcdVersion}},
		"CoreDNS=true is CoreDNS": {func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"CoreDNS": true}
		}, []string{"registry.k8s.io/kube-apiserver:v1.36.3", "registry.k8s.io/kube-controller-manager:v1.36.3",
			"registry.k8s.io/kube-scheduler:v1.36.3", "registry.k8s.io/kube-proxy:v1.36.3",
			"registry.k8s.io/coredns/coredns:" + CoreDNSVersion, "registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:" + EtcdVersion}},
		"CI build": {func(c *kubeadm.ClusterConfiguration) {
			c.KubernetesVersion, c.CIImageRepository = "v1.37.0-alpha.1+abc", CIRepository
		}, []string{CIRepository + "/kube-apiserver:v1.37.0-alpha.1_abc", CIRepository + "/kube-controller-manager:v1.37.0-alpha.1_abc",
			CIRepository + "/kube-scheduler:v1.37.0-alpha.1_abc", CIRepository + "/kube-proxy:v1.37.0-alpha.1_abc",
			"registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/etcd:3.7.0-0"}},
	}
	for name, tc := range cases {
		got := List(cluster(tc.mod))
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n got  %q\n want %q", name, got, tc.want)
		}
	}
}
