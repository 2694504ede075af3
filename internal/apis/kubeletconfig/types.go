package kubeletconfig

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/componentbase"
)

// Group, Version and Kind name the document.
const (
	Group   = "kubelet.config.k8s.io"
	Version = "v1beta1"
	Kind    = "KubeletConfiguration"
)

// KubeletConfiguration is the kubelet's configuration file.
type KubeletConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	EnableServer                              *bool                               `json:"enableServer,omitempty"`
	StaticPodPath                             string                              `json:"staticPodPath,omitempty"`
	PodLogsDir                                string                              `json:"podLogsDir,omitempty"`
	SyncFrequency                             metav1.Duration                     `json:"syncFrequency,omitempty"`
	FileCheckFrequency                        metav1.Duration                     `json:"fileCheckFrequency,omitempty"`
	HTTPCheckFrequency                        metav1.Duration                     `json:"httpCheckFrequency,omitempty"`
	StaticPodURL                              string                              `json:"staticPodURL,omitempty"`
	StaticPodURLHeader                        map[string][]string                 `json:"staticPodURLHeader,omitempty"`
	Address                                   string                              `json:"address,omitempty"`
	Port                                      int32                               `json:"port,omitempty"`
	ReadOnlyPort                              int32                               `json:"readOnlyPort,omitempty"`
	TLSCertFile                               string                              `json:"tlsCertFile,omitempty"`
	TLSPrivateKeyFile                         string                              `json:"tlsPrivateKeyFile,omitempty"`
	TLSCipherSuites                           []string                            `json:"tlsCipherSuites,omitempty"`
	TLSCurvePreferences                       []int32                             `json:"tlsCurvePreferences,omitempty"`
	TLSMinVersion                             string                              `json:"tlsMinVersion,omitempty"`
	RotateCertificates                        bool                                `json:"rotateCertificates,omitempty"`
	ServerTLSBootstrap                        bool                                `json:"serverTLSBootstrap,omitempty"`
	Authentication                            KubeletAuthentication               `json:"authentication"`
	Authorization                             KubeletAuthorization                `json:"authorization"`
	RegistryPullQPS                           *int32                              `json:"registryPullQPS,omitempty"`
	RegistryBurst                             int32                               `json:"registryBurst,omitempty"`
	ImagePullCredentialsVerificationPolicy    string                              `json:"imagePullCredentialsVerificationPolicy,omitempty"`
	PreloadedImagesVerificationAllowlist      []string                            `json:"preloadedImagesVerificationAllowlist,omitempty"`
	EventRecordQPS                            *int32                              `json:"eventRecordQPS,omitempty"`
	EventBurst                                int32                               `json:"eventBurst,omitempty"`
	EnableDebuggingHandlers                   *bool                               `json:"enableDebuggingHandlers,omitempty"`
	EnableContentionProfiling                 bool                                `json:"enableContentionProfiling,omitempty"`
	HealthzPort                               *int32                              `json:"healthzPort,omitempty"`
	HealthzBindAddress                        string                              `json:"healthzBindAddress,omitempty"`
	OOMScoreAdj                               *int32                              `json:"oomScoreAdj,omitempty"`
	ClusterDomain                             string                              `json:"clusterDomain,omitempty"`
	ClusterDNS                                []string                            `json:"clusterDNS,omitempty"`
	StreamingConnectionIdleTimeout            metav1.Duration                     `json:"streamingConnectionIdleTimeout,omitempty"`
	NodeStatusUpdateFrequency                 metav1.Duration                     `json:"nodeStatusUpdateFrequency,omitempty"`
	NodeStatusReportFrequency                 metav1.Duration                     `json:"nodeStatusReportFrequency,omitempty"`
	NodeLeaseDurationSeconds                  int32                               `json:"nodeLeaseDurationSeconds,omitempty"`
	ImageMinimumGCAge                         metav1.Duration                     `json:"imageMinimumGCAge,omitempty"`
	ImageMaximumGCAge                         metav1.Duration                     `json:"imageMaximumGCAge,omitempty"`
	ImageGCHighThresholdPercent               *int32                              `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent                *int32                              `json:"imageGCLowThresholdPercent,omitempty"`
	VolumeStatsAggPeriod                      metav1.Duration                     `json:"volumeStatsAggPeriod,omitempty"`
	KubeletCgroups                            string                              `json:"kubeletCgroups,omitempty"`
	SystemCgroups                             string                              `json:"systemCgroups,omitempty"`
	CgroupRoot                                string                              `json:"cgroupRoot,omitempty"`
	CgroupsPerQOS                             *bool                               `json:"cgroupsPerQOS,omitempty"`
	CgroupDriver                              string                              `json:"cgroupDriver,omitempty"`
	CPUManagerPolicy                          string                              `json:"cpuManagerPolicy,omitempty"`
	SingleProcessOOMKill                      *bool                               `json:"singleProcessOOMKill,omitempty"`
	CPUManagerPolicyOptions                   map[string]string                   `json:"cpuManagerPolicyOptions,omitempty"`
	CPUManagerReconcilePeriod                 metav1.Duration                     `json:"cpuManagerReconcilePeriod,omitempty"`
	MemoryManagerPolicy                       string                              `json:"memoryManagerPolicy,omitempty"`
	TopologyManagerPolicy                     string                              `json:"topologyManagerPolicy,omitempty"`
	TopologyManagerScope                      string                              `json:"topologyManagerScope,omitempty"`
	TopologyManagerPolicyOptions              map[string]string                   `json:"topologyManagerPolicyOptions,omitempty"`
	QOSReserved                               map[string]string                   `json:"qosReserved,omitempty"`
	RuntimeRequestTimeout                     metav1.Duration                     `json:"runtimeRequestTimeout,omitempty"`
	HairpinMode                               string                              `json:"hairpinMode,omitempty"`
	MaxPods                                   int32                               `json:"maxPods,omitempty"`
	PodCIDR                                   string                              `json:"podCIDR,omitempty"`
	PodPidsLimit                              *int64                              `json:"podPidsLimit,omitempty"`
	ResolverConfig                            *string                             `json:"resolvConf,omitempty"`
	RunOnce                                   bool                                `json:"runOnce,omitempty"`
	CPUCFSQuota                               *bool                               `json:"cpuCFSQuota,omitempty"`
	CPUCFSQuotaPeriod                         *metav1.Duration                    `json:"cpuCFSQuotaPeriod,omitempty"`
	NodeStatusMaxImages                       *int32                              `json:"nodeStatusMaxImages,omitempty"`
	MaxOpenFiles                              int64                               `json:"maxOpenFiles,omitempty"`
	ContentType                               string                              `json:"contentType,omitempty"`
	KubeAPIQPS                                *int32                              `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst                              int32                               `json:"kubeAPIBurst,omitempty"`
	SerializeImagePulls                       *bool                               `json:"serializeImagePulls,omitempty"`
	MaxParallelImagePulls                     *int32                              `json:"maxParallelImagePulls,omitempty"`
	EvictionHard                              map[string]string                   `json:"evictionHard,omitempty"`
	EvictionSoft                              map[string]string                   `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod                   map[string]string                   `json:"evictionSoftGracePeriod,omitempty"`
	EvictionPressureTransitionPeriod          metav1.Duration                     `json:"evictionPressureTransitionPeriod,omitempty"`
	EvictionMaxPodGracePeriod                 int32                               `json:"evictionMaxPodGracePeriod,omitempty"`
	EvictionMinimumReclaim                    map[string]string                   `json:"evictionMinimumReclaim,omitempty"`
	MergeDefaultEvictionSettings              *bool                               `json:"mergeDefaultEvictionSettings,omitempty"`
	PodsPerCore                               int32                               `json:"podsPerCore,omitempty"`
	EnableControllerAttachDetach              *bool                               `json:"enableControllerAttachDetach,omitempty"`
	ProtectKernelDefaults                     bool                                `json:"protectKernelDefaults,omitempty"`
	MakeIPTablesUtilChains                    *bool                               `json:"makeIPTablesUtilChains,omitempty"`
	IPTablesMasqueradeBit                     *int32                              `json:"iptablesMasqueradeBit,omitempty"`
	IPTablesDropBit                           *int32                              `json:"iptablesDropBit,omitempty"`
	FeatureGates                              map[string]bool                     `json:"featureGates,omitempty"`
	FailSwapOn                                *bool                               `json:"failSwapOn,omitempty"`
	MemorySwap                                MemorySwapConfiguration             `json:"memorySwap,omitempty"`
	ContainerLogMaxSize                       string                              `json:"containerLogMaxSize,omitempty"`
	ContainerLogMaxFiles                      *int32                              `json:"containerLogMaxFiles,omitempty"`
	ContainerLogMaxWorkers                    *int32                              `json:"containerLogMaxWorkers,omitempty"`
	ContainerLogMonitorInterval               *metav1.Duration                    `json:"containerLogMonitorInterval,omitempty"`
	ConfigMapAndSecretChangeDetectionStrategy string                              `json:"configMapAndSecretChangeDetectionStrategy,omitempty"`
	SystemReserved                            map[string]string                   `json:"systemReserved,omitempty"`
	KubeReserved                              map[string]string                   `json:"kubeReserved,omitempty"`
	ReservedSystemCPUs                        string                              `json:"reservedSystemCPUs,omitempty"`
	ShowHiddenMetricsForVersion               string                              `json:"showHiddenMetricsForVersion,omitempty"`
	SystemReservedCgroup                      string                              `json:"systemReservedCgroup,omitempty"`
	KubeReservedCgroup                        string                              `json:"kubeReservedCgroup,omitempty"`
	EnforceNodeAllocatable                    []string                            `json:"enforceNodeAllocatable,omitempty"`
	AllowedUnsafeSysctls                      []string                            `json:"allowedUnsafeSysctls,omitempty"`
	VolumePluginDir                           string                              `json:"volumePluginDir,omitempty"`
	ProviderID                                string                              `json:"providerID,omitempty"`
	KernelMemcgNotification                   bool                                `json:"kernelMemcgNotification,omitempty"`
	Logging                                   componentbase.LoggingConfiguration  `json:"logging,omitempty"`
	EnableSystemLogHandler                    *bool                               `json:"enableSystemLogHandler,omitempty"`
	EnableSystemLogQuery                      *bool                               `json:"enableSystemLogQuery,omitempty"`
	ShutdownGracePeriod                       metav1.Duration                     `json:"shutdownGracePeriod,omitempty"`
	ShutdownGracePeriodCriticalPods           metav1.Duration                     `json:"shutdownGracePeriodCriticalPods,omitempty"`
	ShutdownGracePeriodByPodPriority          []ShutdownGracePeriodByPodPriority  `json:"shutdownGracePeriodByPodPriority,omitempty"`
	CrashLoopBackOff                          CrashLoopBackOffConfig              `json:"crashLoopBackOff,omitempty"`
	ReservedMemory                            []MemoryReservation                 `json:"reservedMemory,omitempty"`
	EnableProfilingHandler                    *bool                               `json:"enableProfilingHandler,omitempty"`
	EnableDebugFlagsHandler                   *bool                               `json:"enableDebugFlagsHandler,omitempty"`
	SeccompDefault                            *bool                               `json:"seccompDefault,omitempty"`
	MemoryThrottlingFactor                    *float64                            `json:"memoryThrottlingFactor,omitempty"`
	MemoryReservationPolicy                   string                              `json:"memoryReservationPolicy,omitempty"`
	RegisterWithTaints                        []corev1.Taint                      `json:"registerWithTaints,omitempty"`
	RegisterNode                              *bool                               `json:"registerNode,omitempty"`
	Tracing                                   *componentbase.TracingConfiguration `json:"tracing,omitempty"`
	LocalStorageCapacityIsolation             *bool                               `json:"localStorageCapacityIsolation,omitempty"`
	ContainerRuntimeEndpoint                  string                              `json:"containerRuntimeEndpoint"`
	ImageServiceEndpoint                      string                              `json:"imageServiceEndpoint,omitempty"`
	FailCgroupV1                              *bool                               `json:"failCgroupV1,omitempty"`
	UserNamespaces                            *UserNamespaces                     `json:"userNamespaces,omitempty"`
}

// KubeletAuthentication is how the kubelet's server authenticates callers.
type KubeletAuthentication struct {
	X509      KubeletX509Authentication      `json:"x509"`
	Webhook   KubeletWebhookAuthentication   `json:"webhook"`
	Anonymous KubeletAnonymousAuthentication `json:"anonymous"`
}

// KubeletX509Authentication is client-certificate authentication.
type KubeletX509Authentication struct {
	ClientCAFile string `json:"clientCAFile,omitempty"`
}

// KubeletWebhookAuthentication is bearer-token authentication through the
// API server's TokenReview.
type KubeletWebhookAuthentication struct {
	Enabled  *bool           `json:"enabled,omitempty"`
	CacheTTL metav1.Duration `json:"cacheTTL,omitempty"`
}

// KubeletAnonymousAuthentication allows or refuses anonymous requests.
type KubeletAnonymousAuthentication struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// KubeletAuthorizationMode is AlwaysAllow or Webhook.
type KubeletAuthorizationMode string

// KubeletAuthorization is how the kubelet's server authorises requests.
type KubeletAuthorization struct {
	Mode    KubeletAuthorizationMode    `json:"mode,omitempty"`
	Webhook KubeletWebhookAuthorization `json:"webhook"`
}

// KubeletWebhookAuthorization caches the API server's SubjectAccessReview
// answers.
type KubeletWebhookAuthorization struct {
	CacheAuthorizedTTL   metav1.Duration `json:"cacheAuthorizedTTL,omitempty"`
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL,omitempty"`
}

// MemorySwapConfiguration is how pods may use swap.
type MemorySwapConfiguration struct {
	SwapBehavior string `json:"swapBehavior,omitempty"`
}

// ShutdownGracePeriodByPodPriority is the shutdown grace period of pods
// from a priority on.
type ShutdownGracePeriodByPodPriority struct {
	Priority                   int32 `json:"priority"`
	ShutdownGracePeriodSeconds int64 `json:"shutdownGracePeriodSeconds"`
}

// CrashLoopBackOffConfig bounds the restart back-off of containers.
type CrashLoopBackOffConfig struct {
	MaxContainerRestartPeriod *metav1.Duration `json:"maxContainerRestartPeriod,omitempty"`
}

// MemoryReservation is memory reserved on one NUMA node.
type MemoryReservation struct {
	NumaNode int32               `json:"numaNode"`
	Limits   corev1.ResourceList `json:"limits"`
}

// UserNamespaces configures the user namespaces of pods.
type UserNamespaces struct {
	IDsPerPod *int64 `json:"idsPerPod,omitempty"`
}

// WithTypeMeta returns a copy of k with apiVersion and kind set where k
// leaves them empty, as a written document needs them. Only the top level
// is copied: the copy shares k's lists, maps and pointers.
func (k *KubeletConfiguration) WithTypeMeta() *KubeletConfiguration {
	c := *k
	if c.APIVersion == "" {
		c.APIVersion = Group + "/" + Version
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	return &c
}
