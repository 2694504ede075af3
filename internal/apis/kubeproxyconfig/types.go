package kubeproxyconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/componentbase"
)

// Group, Version and Kind name the document.
const (
	Group   = "kubeproxy.config.k8s.io"
	Version = "v1alpha1"
	Kind    = "KubeProxyConfiguration"
)

// KubeProxyConfiguration is kube-proxy's configuration file.
type KubeProxyConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	FeatureGates                map[string]bool                             `json:"featureGates,omitempty"`
	ClientConnection            componentbase.ClientConnectionConfiguration `json:"clientConnection"`
	Logging                     componentbase.LoggingConfiguration          `json:"logging,omitempty"`
	HostnameOverride            string                                      `json:"hostnameOverride"`
	BindAddress                 string                                      `json:"bindAddress"`
	HealthzBindAddress          string                                      `json:"healthzBindAddress"`
	MetricsBindAddress          string                                      `json:"metricsBindAddress"`
	BindAddressHardFail         bool                                        `json:"bindAddressHardFail"`
	EnableProfiling             bool                                        `json:"enableProfiling"`
	ShowHiddenMetricsForVersion string                                      `json:"showHiddenMetricsForVersion"`
	Mode                        string                                      `json:"mode"`
	IPTables                    KubeProxyIPTablesConfiguration              `json:"iptables"`
	IPVS                        KubeProxyIPVSConfiguration                  `json:"ipvs"`
	NFTables                    KubeProxyNFTablesConfiguration              `json:"nftables"`
	Winkernel                   KubeProxyWinkernelConfiguration             `json:"winkernel"`
	DetectLocalMode             string                                      `json:"detectLocalMode"`
	DetectLocal                 DetectLocalConfiguration                    `json:"detectLocal"`
	ClusterCIDR                 string                                      `json:"clusterCIDR"`
	NodePortAddresses           []string                                    `json:"nodePortAddresses"`
	OOMScoreAdj                 *int32                                      `json:"oomScoreAdj"`
	Conntrack                   KubeProxyConntrackConfiguration             `json:"conntrack"`
	ConfigSyncPeriod            metav1.Duration                             `json:"configSyncPeriod"`
	PortRange                   string                                      `json:"portRange"`
	WindowsRunAsService         bool                                        `json:"windowsRunAsService,omitempty"`
}

// KubeProxyIPTablesConfiguration is the iptables mode's settings.
type KubeProxyIPTablesConfiguration struct {
	MasqueradeBit      *int32          `json:"masqueradeBit"`
	MasqueradeAll      bool            `json:"masqueradeAll"`
	LocalhostNodePorts *bool           `json:"localhostNodePorts"`
	SyncPeriod         metav1.Duration `json:"syncPeriod"`
	MinSyncPeriod      metav1.Duration `json:"minSyncPeriod"`
}

// KubeProxyIPVSConfiguration is the IPVS mode's settings.
type KubeProxyIPVSConfiguration struct {
	SyncPeriod    metav1.Duration `json:"syncPeriod"`
	MinSyncPeriod metav1.Duration `json:"minSyncPeriod"`
	Scheduler     string          `json:"scheduler"`
	ExcludeCIDRs  []string        `json:"excludeCIDRs"`
	StrictARP     bool            `json:"strictARP"`
	TCPTimeout    metav1.Duration `json:"tcpTimeout"`
	TCPFinTimeout metav1.Duration `json:"tcpFinTimeout"`
	UDPTimeout    metav1.Duration `json:"udpTimeout"`
}

// KubeProxyNFTablesConfiguration is the nftables mode's settings.
type KubeProxyNFTablesConfiguration struct {
	MasqueradeBit *int32          `json:"masqueradeBit"`
	MasqueradeAll bool            `json:"masqueradeAll"`
	SyncPeriod    metav1.Duration `json:"syncPeriod"`
	MinSyncPeriod metav1.Duration `json:"minSyncPeriod"`
}

// KubeProxyWinkernelConfiguration is the Windows kernel mode's settings.
type KubeProxyWinkernelConfiguration struct {
	NetworkName           string `json:"networkName"`
	SourceVip             string `json:"sourceVip"`
	EnableDSR             bool   `json:"enableDSR"`
	RootHnsEndpointName   string `json:"rootHnsEndpointName"`
	ForwardHealthCheckVip bool   `json:"forwardHealthCheckVip"`
}

// DetectLocalConfiguration tells local traffic apart.
type DetectLocalConfiguration struct {
	BridgeInterface     string `json:"bridgeInterface"`
	InterfaceNamePrefix string `json:"interfaceNamePrefix"`
}

// KubeProxyConntrackConfiguration is the connection tracking settings.
type KubeProxyConntrackConfiguration struct {
	MaxPerCore            *int32           `json:"maxPerCore"`
	Min                   *int32           `json:"min"`
	TCPEstablishedTimeout *metav1.Duration `json:"tcpEstablishedTimeout"`
	TCPCloseWaitTimeout   *metav1.Duration `json:"tcpCloseWaitTimeout"`
	TCPBeLiberal          bool             `json:"tcpBeLiberal"`
	UDPTimeout            metav1.Duration  `json:"udpTimeout"`
	UDPStreamTimeout      metav1.Duration  `json:"udpStreamTimeout"`
}
