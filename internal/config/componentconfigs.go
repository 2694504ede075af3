package config

import (
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"strings"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Paths and values kubeadm writes into the component configurations.
const (
	StaticPodPath           = "/etc/kubernetes/manifests"
	KubeProxyKubeconfig     = "/var/lib/kube-proxy/kubeconfig.conf"
	kubeletHealthzAddress   = "127.0.0.1"
	kubeletHealthzPort      = 10248
	kubeletCgroupDriver     = "systemd"
	kubeletAuthzModeWebhook = "Webhook"
)

// DefaultComponentConfigs makes sure c carries a kubelet and a kube-proxy
// configuration and fills in what kubeadm decides for them: the fields a
// user set are kept, the empty ones derived from the cluster settings.
func DefaultComponentConfigs(c *kubeadm.ClusterConfiguration, advertiseAddress, criSocket string) {
	if c.ComponentConfigs.Kubelet == nil {
		c.ComponentConfigs.Kubelet = NewKubeletConfiguration()
	}
	DefaultKubeletConfiguration(c.ComponentConfigs.Kubelet, c)
	if c.ComponentConfigs.KubeProxy == nil {
		c.ComponentConfigs.KubeProxy = NewKubeProxyConfiguration()
	}
	DefaultKubeProxyConfiguration(c.ComponentConfigs.KubeProxy, c, advertiseAddress)
}

// NewKubeletConfiguration returns an empty kubelet configuration document.
func NewKubeletConfiguration() *kubeletv1beta1.KubeletConfiguration {
	k := &kubeletv1beta1.KubeletConfiguration{}
	k.APIVersion = KubeletGroupVersion.String()
	k.Kind = KindKubelet
	return k
}

// NewKubeProxyConfiguration returns an empty kube-proxy configuration document.
func NewKubeProxyConfiguration() *kubeproxyv1alpha1.KubeProxyConfiguration {
	k := &kubeproxyv1alpha1.KubeProxyConfiguration{}
	k.APIVersion = KubeProxyGroupVersion.String()
	k.Kind = KindKubeProxy
	return k
}

// DefaultKubeletConfiguration fills the kubelet fields kubeadm owns.
func DefaultKubeletConfiguration(k *kubeletv1beta1.KubeletConfiguration, c *kubeadm.ClusterConfiguration) {
	k.APIVersion = KubeletGroupVersion.String()
	k.Kind = KindKubelet
	if k.StaticPodPath == "" {
		k.StaticPodPath = StaticPodPath
	}
	if k.ClusterDomain == "" {
		k.ClusterDomain = c.Networking.DNSDomain
	}
	if len(k.ClusterDNS) == 0 {
		if ip, err := DNSServiceIP(c.Networking.ServiceSubnet); err == nil {
			k.ClusterDNS = []string{ip.String()}
		}
	}
	if k.Authentication.X509.ClientCAFile == "" {
		k.Authentication.X509.ClientCAFile = filepath.Join(c.CertificatesDir, "ca.crt")
	}
	if k.Authentication.Anonymous.Enabled == nil {
		f := false
		k.Authentication.Anonymous.Enabled = &f
	}
	if k.Authentication.Webhook.Enabled == nil {
		t := true
		k.Authentication.Webhook.Enabled = &t
	}
	if k.Authorization.Mode == "" {
		k.Authorization.Mode = kubeletAuthzModeWebhook
	}
	if k.HealthzBindAddress == "" {
		k.HealthzBindAddress = kubeletHealthzAddress
	}
	if k.HealthzPort == nil {
		p := int32(kubeletHealthzPort)
		k.HealthzPort = &p
	}
	// kubeadm-made kubelets always rotate their client certificate.
	k.RotateCertificates = true
	if k.CgroupDriver == "" {
		k.CgroupDriver = kubeletCgroupDriver
	}
}

// DefaultKubeProxyConfiguration fills the kube-proxy fields kubeadm owns.
func DefaultKubeProxyConfiguration(k *kubeproxyv1alpha1.KubeProxyConfiguration, c *kubeadm.ClusterConfiguration, advertiseAddress string) {
	k.APIVersion = KubeProxyGroupVersion.String()
	k.Kind = KindKubeProxy
	if k.BindAddress == "" {
		k.BindAddress = "0.0.0.0"
		if ip := net.ParseIP(advertiseAddress); ip != nil && ip.To4() == nil {
			k.BindAddress = "::"
		}
	}
	if k.ClientConnection.Kubeconfig == "" {
		k.ClientConnection.Kubeconfig = KubeProxyKubeconfig
	}
	if k.ClusterCIDR == "" && c.Networking.PodSubnet != "" {
		k.ClusterCIDR = c.Networking.PodSubnet
	}
}

// DNSServiceIP returns the cluster DNS Service address: the tenth address
// of the (first) service subnet.
func DNSServiceIP(serviceSubnet string) (net.IP, error) {
	return NthServiceIP(serviceSubnet, 10)
}

// APIServerServiceIP returns the "kubernetes" Service address: the first
// address of the (first) service subnet.
func APIServerServiceIP(serviceSubnet string) (net.IP, error) {
	return NthServiceIP(serviceSubnet, 1)
}

// NthServiceIP returns the n-th address of the first CIDR in a
// comma-separated service subnet list.
func NthServiceIP(serviceSubnet string, n int64) (net.IP, error) {
	first, _, _ := strings.Cut(serviceSubnet, ",")
	_, ipnet, err := net.ParseCIDR(strings.TrimSpace(first))
	if err != nil {
		return nil, fmt.Errorf("parsing service subnet %q: %w", serviceSubnet, err)
	}
	ones, bits := ipnet.Mask.Size()
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones))
	if big.NewInt(n).Cmp(size) >= 0 {
		return nil, fmt.Errorf("service subnet %q has fewer than %d addresses", serviceSubnet, n+1)
	}
	base := new(big.Int).SetBytes(ipnet.IP)
	sum := base.Add(base, big.NewInt(n)).Bytes()
	ip := make(net.IP, len(ipnet.IP))
	copy(ip[len(ip)-len(sum):], sum)
	return ip, nil
}
