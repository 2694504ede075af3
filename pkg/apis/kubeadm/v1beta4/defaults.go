package v1beta4

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Static defaults of the v1beta4 format.
const (
	DefaultServiceSubnet           = "10.96.0.0/12"
	DefaultServicesSubnetDualStack = "10.96.0.0/12,fd00:10:96::/112"
	DefaultDNSDomain               = "cluster.local"
	DefaultCertificatesDir         = "/etc/kubernetes/pki"
	DefaultCACertPath              = "/etc/kubernetes/pki/ca.crt"
	DefaultImageRepository         = "registry.k8s.io"
	DefaultClusterName             = "kubernetes"
	DefaultEtcdDataDir             = "/var/lib/etcd"
	DefaultAPIBindPort             = 6443
	DefaultCRISocket               = "unix:///var/run/containerd/containerd.sock"
	DefaultEncryptionAlgorithm     = EncryptionAlgorithmRSA2048

	DefaultCertificateValidityPeriod   = 365 * 24 * time.Hour
	DefaultCACertificateValidityPeriod = 10 * 365 * 24 * time.Hour

	DefaultTokenTTL = 24 * time.Hour
	// DefaultTokenGroup is the group a default bootstrap token authenticates as.
	DefaultTokenGroup = "system:bootstrappers:kubeadm:default-node-token"

	DefaultControlPlaneComponentHealthCheck = 4 * time.Minute
	DefaultKubeletHealthCheck               = 4 * time.Minute
	DefaultKubernetesAPICall                = 1 * time.Minute
	DefaultEtcdAPICall                      = 2 * time.Minute
	DefaultTLSBootstrap                     = 5 * time.Minute
	DefaultDiscovery                        = 5 * time.Minute
	DefaultUpgradeManifests                 = 5 * time.Minute
)

// DefaultTokenUsages are the usages of a default bootstrap token.
func DefaultTokenUsages() []string { return []string{"signing", "authentication"} }

// SetDefaults_InitConfiguration fills in the static defaults of obj.
func SetDefaults_InitConfiguration(obj *InitConfiguration) {
	if obj.BootstrapTokens == nil {
		obj.BootstrapTokens = []BootstrapToken{{}}
	}
	for i := range obj.BootstrapTokens {
		SetDefaults_BootstrapToken(&obj.BootstrapTokens[i])
	}
	SetDefaults_NodeRegistration(&obj.NodeRegistration)
	SetDefaults_APIEndpoint(&obj.LocalAPIEndpoint)
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	SetDefaults_Timeouts(obj.Timeouts)
}

// SetDefaults_ClusterConfiguration fills in the static defaults of obj.
func SetDefaults_ClusterConfiguration(obj *ClusterConfiguration) {
	if obj.KubernetesVersion == "" {
		obj.KubernetesVersion = "stable-1"
	}
	if obj.Networking.ServiceSubnet == "" {
		obj.Networking.ServiceSubnet = DefaultServiceSubnet
	}
	if obj.Networking.DNSDomain == "" {
		obj.Networking.DNSDomain = DefaultDNSDomain
	}
	if obj.CertificatesDir == "" {
		obj.CertificatesDir = DefaultCertificatesDir
	}
	if obj.ImageRepository == "" {
		obj.ImageRepository = DefaultImageRepository
	}
	if obj.ClusterName == "" {
		obj.ClusterName = DefaultClusterName
	}
	if obj.EncryptionAlgorithm == "" {
		obj.EncryptionAlgorithm = DefaultEncryptionAlgorithm
	}
	if obj.CertificateValidityPeriod == nil {
		obj.CertificateValidityPeriod = &metav1.Duration{Duration: DefaultCertificateValidityPeriod}
	}
	if obj.CACertificateValidityPeriod == nil {
		obj.CACertificateValidityPeriod = &metav1.Duration{Duration: DefaultCACertificateValidityPeriod}
	}
	if obj.Etcd.External == nil && obj.Etcd.Local == nil {
		obj.Etcd.Local = &LocalEtcd{}
	}
	if obj.Etcd.Local != nil && obj.Etcd.Local.DataDir == "" {
		obj.Etcd.Local.DataDir = DefaultEtcdDataDir
	}
	// An external etcd that does not name separate HTTP endpoints serves
	// its HTTP requests (/version, /health) on its client endpoints.
	if e := obj.Etcd.External; e != nil && len(e.HTTPEndpoints) == 0 && len(e.Endpoints) > 0 {
		e.HTTPEndpoints = append([]string(nil), e.Endpoints...)
	}
}

// SetDefaults_JoinConfiguration fills in the static defaults of obj.
func SetDefaults_JoinConfiguration(obj *JoinConfiguration) {
	if obj.CACertPath == "" {
		obj.CACertPath = DefaultCACertPath
	}
	SetDefaults_NodeRegistration(&obj.NodeRegistration)
	if obj.ControlPlane != nil {
		SetDefaults_APIEndpoint(&obj.ControlPlane.LocalAPIEndpoint)
	}
	if obj.Discovery.TLSBootstrapToken == "" && obj.Discovery.BootstrapToken != nil {
		obj.Discovery.TLSBootstrapToken = obj.Discovery.BootstrapToken.Token
	}
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	SetDefaults_Timeouts(obj.Timeouts)
}

// SetDefaults_ResetConfiguration fills in the static defaults of obj.
func SetDefaults_ResetConfiguration(obj *ResetConfiguration) {
	if obj.CertificatesDir == "" {
		obj.CertificatesDir = DefaultCertificatesDir
	}
	if obj.CRISocket == "" {
		obj.CRISocket = DefaultCRISocket
	}
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	SetDefaults_Timeouts(obj.Timeouts)
}

// SetDefaults_UpgradeConfiguration fills in the static defaults of obj.
func SetDefaults_UpgradeConfiguration(obj *UpgradeConfiguration) {
	yes := func(p **bool) {
		if *p == nil {
			t := true
			*p = &t
		}
	}
	yes(&obj.Apply.CertificateRenewal)
	yes(&obj.Apply.EtcdUpgrade)
	yes(&obj.Apply.ImagePullSerial)
	if obj.Apply.ImagePullPolicy == "" {
		obj.Apply.ImagePullPolicy = corev1.PullIfNotPresent
	}
	yes(&obj.Node.CertificateRenewal)
	yes(&obj.Node.EtcdUpgrade)
	yes(&obj.Node.ImagePullSerial)
	if obj.Node.ImagePullPolicy == "" {
		obj.Node.ImagePullPolicy = corev1.PullIfNotPresent
	}
	yes(&obj.Plan.EtcdUpgrade)
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	SetDefaults_Timeouts(obj.Timeouts)
}

// SetDefaults_NodeRegistration fills in the static defaults of obj. The CRI
// socket is left empty: kubeadm detects it on the machine when it is unset.
func SetDefaults_NodeRegistration(obj *NodeRegistrationOptions) {
	if obj.ImagePullPolicy == "" {
		obj.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if obj.ImagePullSerial == nil {
		t := true
		obj.ImagePullSerial = &t
	}
}

// SetDefaults_APIEndpoint fills in the static defaults of obj.
func SetDefaults_APIEndpoint(obj *APIEndpoint) {
	if obj.BindPort == 0 {
		obj.BindPort = DefaultAPIBindPort
	}
}

// SetDefaults_BootstrapToken fills in the static defaults of obj.
func SetDefaults_BootstrapToken(obj *BootstrapToken) {
	if obj.TTL == nil {
		obj.TTL = &metav1.Duration{Duration: DefaultTokenTTL}
	}
	if len(obj.Usages) == 0 {
		obj.Usages = DefaultTokenUsages()
	}
	if len(obj.Groups) == 0 {
		obj.Groups = []string{DefaultTokenGroup}
	}
}

// SetDefaults_Timeouts fills every unset timeout with its default.
func SetDefaults_Timeouts(obj *Timeouts) {
	set := func(p **metav1.Duration, d time.Duration) {
		if *p == nil {
			*p = &metav1.Duration{Duration: d}
		}
	}
	set(&obj.ControlPlaneComponentHealthCheck, DefaultControlPlaneComponentHealthCheck)
	set(&obj.KubeletHealthCheck, DefaultKubeletHealthCheck)
	set(&obj.KubernetesAPICall, DefaultKubernetesAPICall)
	set(&obj.EtcdAPICall, DefaultEtcdAPICall)
	set(&obj.TLSBootstrap, DefaultTLSBootstrap)
	set(&obj.Discovery, DefaultDiscovery)
	set(&obj.UpgradeManifests, DefaultUpgradeManifests)
}
