package v1beta3

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: "kubeadm.k8s.io", Version: "v1beta3"}

// Types that did not change between v1beta3 and v1beta4.
type (
	APIEndpoint             = v1beta4.APIEndpoint
	BootstrapToken          = v1beta4.BootstrapToken
	BootstrapTokenString    = v1beta4.BootstrapTokenString
	FileDiscovery           = v1beta4.FileDiscovery
	HostPathMount           = v1beta4.HostPathMount
	ImageMeta               = v1beta4.ImageMeta
	JoinControlPlane        = v1beta4.JoinControlPlane
	Networking              = v1beta4.Networking
	Patches                 = v1beta4.Patches
	BootstrapTokenDiscovery = v1beta4.BootstrapTokenDiscovery
)

// InitConfiguration is the v1beta3 form of the init settings.
type InitConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	BootstrapTokens  []BootstrapToken        `json:"bootstrapTokens,omitempty"`
	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	LocalAPIEndpoint APIEndpoint             `json:"localAPIEndpoint,omitempty"`
	CertificateKey   string                  `json:"certificateKey,omitempty"`
	SkipPhases       []string                `json:"skipPhases,omitempty"`
	Patches          *Patches                `json:"patches,omitempty"`
}

// ClusterConfiguration is the v1beta3 form of the cluster-wide settings.
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
	CertificatesDir      string                `json:"certificatesDir,omitempty"`
	ImageRepository      string                `json:"imageRepository,omitempty"`
	FeatureGates         map[string]bool       `json:"featureGates,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
}

// ControlPlaneComponent holds a component's extra flags (a map in v1beta3)
// and volumes.
type ControlPlaneComponent struct {
	ExtraArgs    map[string]string `json:"extraArgs,omitempty"`
	ExtraVolumes []HostPathMount   `json:"extraVolumes,omitempty"`
}

// APIServer holds the API server settings of v1beta3.
type APIServer struct {
	ControlPlaneComponent  `json:",inline"`
	CertSANs               []string         `json:"certSANs,omitempty"`
	TimeoutForControlPlane *metav1.Duration `json:"timeoutForControlPlane,omitempty"`
}

// DNS holds the DNS add-on settings of v1beta3.
type DNS struct {
	ImageMeta `json:",inline"`
}

// Etcd says whether etcd is local or external.
type Etcd struct {
	Local    *LocalEtcd    `json:"local,omitempty"`
	External *ExternalEtcd `json:"external,omitempty"`
}

// LocalEtcd configures the local etcd static pod in v1beta3.
type LocalEtcd struct {
	ImageMeta      `json:",inline"`
	DataDir        string            `json:"dataDir"`
	ExtraArgs      map[string]string `json:"extraArgs,omitempty"`
	ServerCertSANs []string          `json:"serverCertSANs,omitempty"`
	PeerCertSANs   []string          `json:"peerCertSANs,omitempty"`
}

// ExternalEtcd points at an external etcd cluster in v1beta3.
type ExternalEtcd struct {
	Endpoints []string `json:"endpoints"`
	CAFile    string   `json:"caFile"`
	CertFile  string   `json:"certFile"`
	KeyFile   string   `json:"keyFile"`
}

// NodeRegistrationOptions is the v1beta3 form of the node registration.
type NodeRegistrationOptions struct {
	Name                  string            `json:"name,omitempty"`
	CRISocket             string            `json:"criSocket,omitempty"`
	Taints                []corev1.Taint    `json:"taints"`
	KubeletExtraArgs      map[string]string `json:"kubeletExtraArgs,omitempty"`
	IgnorePreflightErrors []string          `json:"ignorePreflightErrors,omitempty"`
	ImagePullPolicy       corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
}

// JoinConfiguration is the v1beta3 form of the join settings.
type JoinConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	NodeRegistration NodeRegistrationOptions `json:"nodeRegistration,omitempty"`
	CACertPath       string                  `json:"caCertPath,omitempty"`
	Discovery        Discovery               `json:"discovery"`
	ControlPlane     *JoinControlPlane       `json:"controlPlane,omitempty"`
	SkipPhases       []string                `json:"skipPhases,omitempty"`
	Patches          *Patches                `json:"patches,omitempty"`
}

// Discovery is the v1beta3 form of the discovery settings.
type Discovery struct {
	BootstrapToken    *BootstrapTokenDiscovery `json:"bootstrapToken,omitempty"`
	File              *FileDiscovery           `json:"file,omitempty"`
	TLSBootstrapToken string                   `json:"tlsBootstrapToken,omitempty"`
	Timeout           *metav1.Duration         `json:"timeout,omitempty"`
}
