package v1beta4

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InitConfiguration holds what is specific to "kubeadm init": the node's own
// registration, its local API endpoint and the bootstrap tokens to create.
type InitConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// BootstrapTokens are created during init; by default one with a 24h TTL.
	BootstrapTokens []BootstrapToken `json:"bootstrapTokens,omitempty"`
	// DryRun makes init only print what it would do.
	DryRun bool `json:"dryRun,omitempty"`
	// NodeRegistration describes how this node registers with the cluster.
	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	// LocalAPIEndpoint is where the API server of this node listens.
	LocalAPIEndpoint APIEndpoint `json:"localAPIEndpoint,omitempty"`
	// CertificateKey encrypts the certificates uploaded to the kubeadm-certs Secret.
	CertificateKey string `json:"certificateKey,omitempty"`
	// SkipPhases lists init phases not to run.
	SkipPhases []string `json:"skipPhases,omitempty"`
	// Patches points at patch files applied to generated manifests.
	Patches *Patches `json:"patches,omitempty"`
	// Timeouts bounds the waits of init.
	Timeouts *Timeouts `json:"timeouts,omitempty"`
}

// ClusterConfiguration holds the settings shared by every node of a cluster.
type ClusterConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Etcd                 Etcd                  `json:"etcd,omitempty"`
	Networking           Networking            `json:"networking,omitempty"`
	KubernetesVersion    string                `json:"kubernetesVersion,omitempty"`
	ControlPlaneEndpoint string                `json:"controlPlaneEndpoint,omitempty"`
	APIServer            APIServer             `json:"apiServer,omitempty"`
	ControllerManager    ControlPlaneComponent `json:"controllerManager,omitempty"`
	Scheduler            ControlPlaneComponent `json:"scheduler,omitempty"`
	DNS                  DNS                   `json:"dns,omitempty"`
	Proxy                Proxy                 `json:"proxy,omitempty"`
	CertificatesDir      string                `json:"certificatesDir,omitempty"`
	ImageRepository      string                `json:"imageRepository,omitempty"`
	FeatureGates         map[string]bool       `json:"featureGates,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	// EncryptionAlgorithm is the key type of every key kubeadm creates:
	// RSA-2048 (default), RSA-3072, RSA-4096, ECDSA-P256 or ECDSA-P384.
	EncryptionAlgorithm EncryptionAlgorithmType `json:"encryptionAlgorithm,omitempty"`
	// CertificateValidityPeriod is the lifetime of leaf certificates (default 1 year).
	CertificateValidityPeriod *metav1.Duration `json:"certificateValidityPeriod,omitempty"`
	// CACertificateValidityPeriod is the lifetime of CA certificates (default 10 years).
	CACertificateValidityPeriod *metav1.Duration `json:"caCertificateValidityPeriod,omitempty"`
}

// EncryptionAlgorithmType names a key algorithm and size.
type EncryptionAlgorithmType string

// The key algorithms kubeadm can use.
const (
	EncryptionAlgorithmECDSAP256 EncryptionAlgorithmType = "ECDSA-P256"
	EncryptionAlgorithmECDSAP384 EncryptionAlgorithmType = "ECDSA-P384"
	EncryptionAlgorithmRSA2048   EncryptionAlgorithmType = "RSA-2048"
	EncryptionAlgorithmRSA3072   EncryptionAlgorithmType = "RSA-3072"
	EncryptionAlgorithmRSA4096   EncryptionAlgorithmType = "RSA-4096"
)

// ControlPlaneComponent holds the settings common to control-plane components.
type ControlPlaneComponent struct {
	// ExtraArgs are extra command-line flags; a name may repeat.
	ExtraArgs []Arg `json:"extraArgs,omitempty"`
	// ExtraVolumes are extra host paths mounted into the component's pod.
	ExtraVolumes []HostPathMount `json:"extraVolumes,omitempty"`
	// ExtraEnvs are extra environment variables of the component's container.
	ExtraEnvs []EnvVar `json:"extraEnvs,omitempty"`
}

// APIServer holds the settings of the API server.
type APIServer struct {
	ControlPlaneComponent `json:",inline"`
	// CertSANs are extra Subject Alternative Names for the serving certificate.
	CertSANs []string `json:"certSANs,omitempty"`
}

// DNS holds the settings of the cluster DNS add-on.
type DNS struct {
	ImageMeta `json:",inline"`
	// Disabled skips installing the DNS add-on.
	Disabled bool `json:"disabled,omitempty"`
}

// ImageMeta overrides where an image is pulled from and its tag.
type ImageMeta struct {
	ImageRepository string `json:"imageRepository,omitempty"`
	ImageTag        string `json:"imageTag,omitempty"`
}

// Proxy holds the settings of the kube-proxy add-on.
type Proxy struct {
	// Disabled skips installing kube-proxy.
	Disabled bool `json:"disabled,omitempty"`
}

// APIEndpoint is an address and port an API server listens on.
type APIEndpoint struct {
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`
	BindPort         int32  `json:"bindPort,omitempty"`
}

// NodeRegistrationOptions describes how a node joins the cluster's API.
type NodeRegistrationOptions struct {
	Name      string         `json:"name,omitempty"`
	CRISocket string         `json:"criSocket,omitempty"`
	Taints    []corev1.Taint `json:"taints"`
	// KubeletExtraArgs are extra kubelet flags; a name may repeat.
	KubeletExtraArgs      []Arg             `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string          `json:"ignorePreflightErrors,omitempty"`
	ImagePullPolicy       corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	ImagePullSerial       *bool             `json:"imagePullSerial,omitempty"`
}

// Networking holds the cluster's address ranges and DNS domain.
type Networking struct {
	ServiceSubnet string `json:"serviceSubnet,omitempty"`
	PodSubnet     string `json:"podSubnet,omitempty"`
	DNSDomain     string `json:"dnsDomain,omitempty"`
}

// BootstrapToken is a token for joining nodes, stored as a Secret.
type BootstrapToken struct {
	Token       *BootstrapTokenString `json:"token"`
	Description string                `json:"description,omitempty"`
	TTL         *metav1.Duration      `json:"ttl,omitempty"`
	Expires     *metav1.Time          `json:"expires,omitempty"`
	Usages      []string              `json:"usages,omitempty"`
	Groups      []string              `json:"groups,omitempty"`
}

// Etcd says whether kubeadm runs etcd locally or uses an external cluster.
type Etcd struct {
	Local    *LocalEtcd    `json:"local,omitempty"`
	External *ExternalEtcd `json:"external,omitempty"`
}

// LocalEtcd configures the etcd static pod kubeadm runs.
type LocalEtcd struct {
	ImageMeta      `json:",inline"`
	DataDir        string   `json:"dataDir"`
	ExtraArgs      []Arg    `json:"extraArgs,omitempty"`
	ExtraEnvs      []EnvVar `json:"extraEnvs,omitempty"`
	ServerCertSANs []string `json:"serverCertSANs,omitempty"`
	PeerCertSANs   []string `json:"peerCertSANs,omitempty"`
}

// ExternalEtcd points at an etcd cluster kubeadm does not manage.
type ExternalEtcd struct {
	Endpoints []string `json:"endpoints"`
	// HTTPEndpoints serve etcd's HTTP traffic (/version, /health,
	// /metrics); they default to Endpoints.
	HTTPEndpoints []string `json:"httpEndpoints,omitempty"`
	CAFile        string   `json:"caFile"`
	CertFile      string   `json:"certFile"`
	KeyFile       string   `json:"keyFile"`
}

// JoinConfiguration holds what "kubeadm join" needs.
type JoinConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	DryRun           bool                    `json:"dryRun,omitempty"`
	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	CACertPath       string                  `json:"caCertPath,omitempty"`
	Discovery        Discovery               `json:"discovery"`
	ControlPlane     *JoinControlPlane       `json:"controlPlane,omitempty"`
	SkipPhases       []string                `json:"skipPhases,omitempty"`
	Patches          *Patches                `json:"patches,omitempty"`
	Timeouts         *Timeouts               `json:"timeouts,omitempty"`
}

// JoinControlPlane holds what a joining control-plane node needs.
type JoinControlPlane struct {
	LocalAPIEndpoint APIEndpoint `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string      `json:"certificateKey,omitempty"`
}

// Discovery says how a joining node finds and trusts the cluster.
type Discovery struct {
	BootstrapToken    *BootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
	File              *FileDiscovery           `json:"file,omitempty"`
	TLSBootstrapToken string                   `json:"tlsBootstrapToken,omitempty"`
}

// BootstrapTokenDiscovery finds the cluster with a bootstrap token.
type BootstrapTokenDiscovery struct {
	Token                    string   `json:"token"`
	APIServerEndpoint        string   `json:"apiServerEndpoint,omitempty"`
	CACertHashes             []string `json:"caCertHashes,omitempty"`
	UnsafeSkipCAVerification bool     `json:"unsafeSkipCAVerification,omitempty"`
}

// FileDiscovery finds the cluster from a kubeconfig file or URL.
type FileDiscovery struct {
	KubeConfigPath string `json:"kubeConfigPath"`
}

// HostPathMount is an extra host path mounted into a static pod.
type HostPathMount struct {
	Name      string              `json:"name"`
	HostPath  string              `json:"hostPath"`
	MountPath string              `json:"mountPath"`
	ReadOnly  bool                `json:"readOnly,omitempty"`
	PathType  corev1.HostPathType `json:"pathType,omitempty"`
}

// Patches points at a folder of patch files.
type Patches struct {
	Directory string `json:"directory,omitempty"`
}

// Arg is one command-line flag, without the leading dashes.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// EnvVar is an environment variable of a static pod's container.
type EnvVar struct {
	corev1.EnvVar `json:",inline"`
}

// ResetConfiguration holds what "kubeadm reset" needs.
type ResetConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	CleanupTmpDir         bool      `json:"cleanupTmpDir,omitempty"`
	CertificatesDir       string    `json:"certificatesDir,omitempty"`
	CRISocket             string    `json:"criSocket,omitempty"`
	DryRun                bool      `json:"dryRun,omitempty"`
	Force                 bool      `json:"force,omitempty"`
	IgnorePreflightErrors []string  `json:"ignorePreflightErrors,omitempty"`
	SkipPhases            []string  `json:"skipPhases,omitempty"`
	UnmountFlags          []string  `json:"unmountFlags,omitempty"`
	Timeouts              *Timeouts `json:"timeouts,omitempty"`
}

// Timeouts bounds kubeadm's waits.
type Timeouts struct {
	ControlPlaneComponentHealthCheck *metav1.Duration `json:"controlPlaneComponentHealthCheck,omitempty"`
	KubeletHealthCheck               *metav1.Duration `json:"kubeletHealthCheck,omitempty"`
	KubernetesAPICall                *metav1.Duration `json:"kubernetesAPICall,omitempty"`
	EtcdAPICall                      *metav1.Duration `json:"etcdAPICall,omitempty"`
	TLSBootstrap                     *metav1.Duration `json:"tlsBootstrap,omitempty"`
	Discovery                        *metav1.Duration `json:"discovery,omitempty"`
	UpgradeManifests                 *metav1.Duration `json:"upgradeManifests,omitempty"`
}

// UpgradeConfiguration holds the settings of the "kubeadm upgrade" commands.
type UpgradeConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	Apply    UpgradeApplyConfiguration `json:"apply"`
	Diff     UpgradeDiffConfiguration  `json:"diff"`
	Node     UpgradeNodeConfiguration  `json:"node"`
	Plan     UpgradePlanConfiguration  `json:"plan"`
	Timeouts *Timeouts                 `json:"timeouts,omitempty"`
}

// UpgradeApplyConfiguration holds the settings of "kubeadm upgrade apply".
type UpgradeApplyConfiguration struct {
	KubernetesVersion         string            `json:"kubernetesVersion,omitempty"`
	AllowExperimentalUpgrades *bool             `json:"allowExperimentalUpgrades,omitempty"`
	AllowRCUpgrades           *bool             `json:"allowRCUpgrades,omitempty"`
	CertificateRenewal        *bool             `json:"certificateRenewal,omitempty"`
	DryRun                    *bool             `json:"dryRun,omitempty"`
	EtcdUpgrade               *bool             `json:"etcdUpgrade,omitempty"`
	ForceUpgrade              *bool             `json:"forceUpgrade,omitempty"`
	IgnorePreflightErrors     []string          `json:"ignorePreflightErrors,omitempty"`
	Patches                   *Patches          `json:"patches,omitempty"`
	PrintConfig               *bool             `json:"printConfig,omitempty"`
	SkipPhases                []string          `json:"skipPhases,omitempty"`
	ImagePullPolicy           corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	ImagePullSerial           *bool             `json:"imagePullSerial,omitempty"`
}

// UpgradeDiffConfiguration holds the settings of "kubeadm upgrade diff".
type UpgradeDiffConfiguration struct {
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	DiffContextLines  int    `json:"contextLines,omitempty"`
}

// UpgradeNodeConfiguration holds the settings of "kubeadm upgrade node".
type UpgradeNodeConfiguration struct {
	CertificateRenewal    *bool             `json:"certificateRenewal,omitempty"`
	DryRun                *bool             `json:"dryRun,omitempty"`
	EtcdUpgrade           *bool             `json:"etcdUpgrade,omitempty"`
	IgnorePreflightErrors []string          `json:"ignorePreflightErrors,omitempty"`
	SkipPhases            []string          `json:"skipPhases,omitempty"`
	Patches               *Patches          `json:"patches,omitempty"`
	ImagePullPolicy       corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	ImagePullSerial       *bool             `json:"imagePullSerial,omitempty"`
}

// UpgradePlanConfiguration holds the settings of "kubeadm upgrade plan".
type UpgradePlanConfiguration struct {
	KubernetesVersion         string   `json:"kubernetesVersion,omitempty"`
	AllowExperimentalUpgrades *bool    `json:"allowExperimentalUpgrades,omitempty"`
	AllowRCUpgrades           *bool    `json:"allowRCUpgrades,omitempty"`
	DryRun                    *bool    `json:"dryRun,omitempty"`
	EtcdUpgrade               *bool    `json:"etcdUpgrade,omitempty"`
	IgnorePreflightErrors     []string `json:"ignorePreflightErrors,omitempty"`
	PrintConfig               *bool    `json:"printConfig,omitempty"`
}
