package config

import (
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
)

// Paths and values kubeadm writes into the component configurations.
const (
	StaticPodPath         = "/etc/kubernetes/manifests"
	KubeProxyKubeconfig   = "/var/lib/kube-proxy/kubeconfig.conf"
	kubeletHealthzAddress = "127.0.0.1"
	kubeletHealthzPort    = 10248
	kubeletCgroupDriver   = "systemd"
)

// DefaultComponentConfigs makes sure c carries a kubelet and a kube-proxy
// configuration and fills in what kubeadm decides for them: the fields a
// user set are kept, the empty ones derived from the cluster settings.
// A field the user set to something else than kubeadm would is reported
// through warn (which may be nil), as upstream kubeadm warns of it.
// c.Subnets must be set (see ParseAddresses); advertise is the API
// server's advertise address, not valid when there is none.
func DefaultComponentConfigs(c *kubeadm.ClusterConfiguration, advertise netip.Addr, warn func(format string, args ...any)) {
	if c.ComponentConfigs.KubeProxy == nil {
		c.ComponentConfigs.KubeProxy = NewKubeProxyConfiguration()
	}
	DefaultKubeProxyConfiguration(c.ComponentConfigs.KubeProxy, c, advertise, warn)
	if c.ComponentConfigs.Kubelet == nil {
		c.ComponentConfigs.Kubelet = NewKubeletConfiguration()
	}
	DefaultKubeletConfiguration(c.ComponentConfigs.Kubelet, c, warn)
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

// ownedField fills one field kubeadm decides: unset (as isSet tells), it
// gets the recommended value; set to something else, it is kept and warn
// says so.
func ownedField[T any](warn func(string, ...any), kind, name string, isSet bool, provided *T, recommended T, equal func(a, b T) bool) {
	switch {
	case !isSet:
		*provided = recommended
	case !equal(*provided, recommended) && warn != nil:
		warn("%s %s is %v, kept although kubeadm recommends %v", kind, name, shown(*provided), shown(recommended))
	}
}

func eq[T comparable](a, b T) bool { return a == b }

// shown is what a pointer points at, for messages.
func shown(v any) any {
	if r := reflect.ValueOf(v); r.Kind() == reflect.Pointer && !r.IsNil() {
		return r.Elem().Interface()
	}
	return v
}

// DefaultKubeletConfiguration fills the kubelet fields kubeadm owns.
func DefaultKubeletConfiguration(k *kubeletv1beta1.KubeletConfiguration, c *kubeadm.ClusterConfiguration, warn func(format string, args ...any)) {
	k.APIVersion = KubeletGroupVersion.String()
	k.Kind = KindKubelet
	const kind = KindKubelet
	ownedField(warn, kind, "staticPodPath", k.StaticPodPath != "", &k.StaticPodPath, StaticPodPath, eq)
	// An explicit empty list (no cluster DNS) is the user's choice.
	if ip, err := DNSServiceIP(c.Subnets.Service); err == nil {
		ownedField(warn, kind, "clusterDNS", k.ClusterDNS != nil, &k.ClusterDNS, []string{ip.String()}, slices.Equal)
	}
	ownedField(warn, kind, "clusterDomain", k.ClusterDomain != "", &k.ClusterDomain, c.Networking.DNSDomain, eq)
	ownedField(warn, kind, "authentication.x509.clientCAFile", k.Authentication.X509.ClientCAFile != "",
		&k.Authentication.X509.ClientCAFile, filepath.Join(c.CertificatesDir, "ca.crt"), eq)
	ownedField(warn, kind, "authentication.anonymous.enabled", k.Authentication.Anonymous.Enabled != nil,
		&k.Authentication.Anonymous.Enabled, new(false), ptrEqual)
	ownedField(warn, kind, "authorization.mode", k.Authorization.Mode != "",
		&k.Authorization.Mode, kubeletv1beta1.KubeletAuthorizationModeWebhook, eq)
	ownedField(warn, kind, "authentication.webhook.enabled", k.Authentication.Webhook.Enabled != nil,
		&k.Authentication.Webhook.Enabled, new(true), ptrEqual)
	ownedField(warn, kind, "healthzBindAddress", k.HealthzBindAddress != "", &k.HealthzBindAddress, kubeletHealthzAddress, eq)
	ownedField(warn, kind, "healthzPort", k.HealthzPort != nil, &k.HealthzPort, new(int32(kubeletHealthzPort)), ptrEqual)
	// kubeadm-made kubelets always rotate their client certificate.
	k.RotateCertificates = true
	if k.CgroupDriver == "" {
		k.CgroupDriver = kubeletCgroupDriver
	}
	if cis.Enabled(c.FeatureGates) {
		hardenKubeletConfiguration(k)
	}
}

// hardenKubeletConfiguration applies the CISHardening profile to the
// kubelets' configuration (which every node gets through the kubelet-config
// ConfigMap): a serving certificate signed by the cluster CA through a CSR
// (the API server verifies it with --kubelet-certificate-authority, so this
// one is not the user's to turn off), and, where the user set nothing,
// strong TLS cipher suites, the runtime's default seccomp profile for every
// container and a limit on the processes of a Pod.
func hardenKubeletConfiguration(k *kubeletv1beta1.KubeletConfiguration) {
	k.ServerTLSBootstrap = true
	if len(k.TLSCipherSuites) == 0 {
		k.TLSCipherSuites = cis.CipherSuites()
	}
	if k.SeccompDefault == nil {
		k.SeccompDefault = new(true)
	}
	if k.PodPidsLimit == nil {
		k.PodPidsLimit = new(cis.PodPidsLimit)
	}
}

// DefaultKubeProxyConfiguration fills the kube-proxy fields kubeadm owns.
func DefaultKubeProxyConfiguration(k *kubeproxyv1alpha1.KubeProxyConfiguration, c *kubeadm.ClusterConfiguration, advertise netip.Addr, warn func(format string, args ...any)) {
	k.APIVersion = KubeProxyGroupVersion.String()
	k.Kind = KindKubeProxy
	const kind = KindKubeProxy
	bind := "0.0.0.0"
	if advertise.Is6() {
		bind = "::"
	}
	ownedField(warn, kind, "bindAddress", k.BindAddress != "", &k.BindAddress, bind, eq)
	// Without a pod subnet kubeadm has no opinion on the cluster CIDR.
	if c.Networking.PodSubnet != "" {
		ownedField(warn, kind, "clusterCIDR", k.ClusterCIDR != "", &k.ClusterCIDR, c.Networking.PodSubnet, eq)
	}
	ownedField(warn, kind, "clientConnection.kubeconfig", k.ClientConnection.Kubeconfig != "",
		&k.ClientConnection.Kubeconfig, KubeProxyKubeconfig, eq)
	// kubeadm v1.37 names kube-proxy's default mode.
	if k.Mode == "" {
		k.Mode = kubeproxyv1alpha1.ProxyMode("iptables")
	}
	// kube-proxy deprecated its ipvs mode; kubeadm v1.37 warns of it.
	if k.Mode == kubeproxyv1alpha1.ProxyMode("ipvs") && warn != nil {
		warn("%s mode %q is deprecated in kube-proxy and will be removed; use \"nftables\" or \"iptables\"", kind, k.Mode)
	}
}

// ptrEqual compares what two pointers point at (both nil: equal).
func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
