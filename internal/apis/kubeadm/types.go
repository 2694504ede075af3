package kubeadm

import (
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Leaf types shared with the current file format.
type (
	APIEndpoint               = v1beta4.APIEndpoint
	APIServer                 = v1beta4.APIServer
	Arg                       = v1beta4.Arg
	BootstrapToken            = v1beta4.BootstrapToken
	BootstrapTokenDiscovery   = v1beta4.BootstrapTokenDiscovery
	BootstrapTokenString      = v1beta4.BootstrapTokenString
	ControlPlaneComponent     = v1beta4.ControlPlaneComponent
	DNS                       = v1beta4.DNS
	Discovery                 = v1beta4.Discovery
	EncryptionAlgorithmType   = v1beta4.EncryptionAlgorithmType
	EnvVar                    = v1beta4.EnvVar
	Etcd                      = v1beta4.Etcd
	ExternalEtcd              = v1beta4.ExternalEtcd
	FileDiscovery             = v1beta4.FileDiscovery
	HostPathMount             = v1beta4.HostPathMount
	ImageMeta                 = v1beta4.ImageMeta
	JoinControlPlane          = v1beta4.JoinControlPlane
	LocalEtcd                 = v1beta4.LocalEtcd
	Networking                = v1beta4.Networking
	NodeRegistrationOptions   = v1beta4.NodeRegistrationOptions
	Patches                   = v1beta4.Patches
	Proxy                     = v1beta4.Proxy
	Timeouts                  = v1beta4.Timeouts
	UpgradeApplyConfiguration = v1beta4.UpgradeApplyConfiguration
	UpgradeDiffConfiguration  = v1beta4.UpgradeDiffConfiguration
	UpgradeNodeConfiguration  = v1beta4.UpgradeNodeConfiguration
	UpgradePlanConfiguration  = v1beta4.UpgradePlanConfiguration
)

// InitConfiguration is everything "kubeadm init" needs: the cluster-wide
// settings and those of the first control-plane node.
type InitConfiguration struct {
	ClusterConfiguration

	BootstrapTokens  []BootstrapToken
	DryRun           bool
	NodeRegistration NodeRegistrationOptions
	LocalAPIEndpoint APIEndpoint
	CertificateKey   string
	SkipPhases       []string
	Patches          *Patches
	Timeouts         *Timeouts

	// AdvertiseIP is LocalAPIEndpoint.AdvertiseAddress as a value, parsed
	// once by package config when it defaults the configuration (IPv4
	// addresses in their 4-byte form); not valid while the address is
	// empty, as on a worker.
	AdvertiseIP netip.Addr
}

// ClusterConfiguration is the cluster-wide configuration.
type ClusterConfiguration struct {
	// ComponentConfigs are the kubelet and kube-proxy configurations that
	// travel with the cluster configuration.
	ComponentConfigs ComponentConfigs

	Etcd       Etcd
	Networking Networking
	// Subnets are Networking's subnets, parsed (see Subnets).
	Subnets              Subnets
	KubernetesVersion    string
	ControlPlaneEndpoint string
	// Endpoint is ControlPlaneEndpoint, parsed (see Endpoint).
	Endpoint          Endpoint
	APIServer         APIServer
	ControllerManager ControlPlaneComponent
	Scheduler         ControlPlaneComponent
	DNS               DNS
	Proxy             Proxy
	CertificatesDir   string
	ImageRepository   string
	// CIImageRepository replaces ImageRepository for control-plane images
	// when KubernetesVersion is a CI build (a "ci/" label).
	CIImageRepository           string
	FeatureGates                map[string]bool
	ClusterName                 string
	EncryptionAlgorithm         EncryptionAlgorithmType
	CertificateValidityPeriod   *metav1.Duration
	CACertificateValidityPeriod *metav1.Duration
}

// ComponentConfigs are the configurations of the components kubeadm
// configures besides its own. A nil entry means "not loaded yet"; the
// UserSupplied flags tell whether the user gave the document or kubeadm
// made it from defaults.
type ComponentConfigs struct {
	Kubelet               *kubeletv1beta1.KubeletConfiguration
	KubeletUserSupplied   bool
	KubeProxy             *kubeproxyv1alpha1.KubeProxyConfiguration
	KubeProxyUserSupplied bool
}

// JoinConfiguration is everything "kubeadm join" needs.
type JoinConfiguration struct {
	DryRun           bool
	NodeRegistration NodeRegistrationOptions
	CACertPath       string
	Discovery        Discovery
	ControlPlane     *JoinControlPlane
	SkipPhases       []string
	Patches          *Patches
	Timeouts         *Timeouts

	// AdvertiseIP is ControlPlane.LocalAPIEndpoint.AdvertiseAddress as a
	// value, parsed once by package config when it defaults the
	// configuration; not valid on a worker.
	AdvertiseIP netip.Addr
}

// ResetConfiguration is everything "kubeadm reset" needs.
type ResetConfiguration struct {
	CleanupTmpDir         bool
	CertificatesDir       string
	CRISocket             string
	DryRun                bool
	Force                 bool
	IgnorePreflightErrors []string
	SkipPhases            []string
	UnmountFlags          []string
	Timeouts              *Timeouts
}

// UpgradeConfiguration holds the settings of the upgrade commands.
type UpgradeConfiguration struct {
	Apply    UpgradeApplyConfiguration
	Diff     UpgradeDiffConfiguration
	Node     UpgradeNodeConfiguration
	Plan     UpgradePlanConfiguration
	Timeouts *Timeouts
}

// KeyAlgorithm is the algorithm of the keys kubeadm makes for the cluster:
// EncryptionAlgorithm.
func (c *ClusterConfiguration) KeyAlgorithm() EncryptionAlgorithmType {
	return c.EncryptionAlgorithm
}

// DNSAddon names a DNS addon kubeadm can install.
type DNSAddon string

// The DNS addons: CoreDNS by default, kube-dns when the CoreDNS feature
// gate is off (docs/decisions/012-kube-dns-addon.md).
const (
	CoreDNS DNSAddon = "CoreDNS"
	KubeDNS DNSAddon = "kube-dns"
)

// CoreDNSGate is the feature gate that chooses the DNS addon, as in
// kubeadm v1.11 and v1.12: "CoreDNS=false" installs kube-dns.
const CoreDNSGate = "CoreDNS"

// DNSAddon is the DNS addon the cluster runs: kube-dns when the CoreDNS
// feature gate is set to false, else CoreDNS. It says nothing of
// dns.disabled.
func (c *ClusterConfiguration) DNSAddon() DNSAddon {
	if on, set := c.FeatureGates[CoreDNSGate]; set && !on {
		return KubeDNS
	}
	return CoreDNS
}
