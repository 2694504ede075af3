package preflight

import (
	"net/netip"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
)

// JoinChecks returns the checks "kubeadm join" runs on every joining node
// after IsPrivilegedUser: no kubelet credentials or cluster CA left from
// an earlier membership, a working container runtime and kubelet, the
// kubelet's port free, and forwarding on for the address family of the
// API server. kubeconfigDir is where kubelet.conf and
// bootstrap-kubelet.conf go; kubeletVersion is the version the kubelet is
// compared with (the cluster's version is not known before discovery).
func JoinChecks(h Host, cfg *kubeadm.JoinConfiguration, kubeconfigDir, kubeletVersion string) []Check {
	checks := []Check{
		FileAvailable(h, filepath.Join(kubeconfigDir, "kubelet.conf")),
		FileAvailable(h, filepath.Join(kubeconfigDir, "bootstrap-kubelet.conf")),
		FileAvailable(h, cfg.CACertPath),
	}
	checks = append(checks, nodeChecks(h, cfg.NodeRegistration.CRISocket, cfg.NodeRegistration.Name, kubeletVersion)...)
	return append(checks, ForwardingChecks(h, joinAddress(cfg))...)
}

// joinAddress is an IP the joining node talks to or serves on, for the
// forwarding checks: the API server of token discovery when it is given as
// an IP address, else the node's own advertise address, else IPv4.
func joinAddress(cfg *kubeadm.JoinConfiguration) netip.Addr {
	if bt := cfg.Discovery.BootstrapToken; bt != nil {
		if ap, err := netip.ParseAddrPort(bt.APIServerEndpoint); err == nil {
			return ap.Addr().Unmap()
		}
	}
	if cfg.AdvertiseIP.IsValid() {
		return cfg.AdvertiseIP
	}
	return netip.IPv4Unspecified()
}

// JoinControlPlaneChecks are the extra checks of a node joining as a
// control-plane node: the control-plane ports and manifests, and for a
// stacked etcd member its ports and an empty data folder.
func JoinControlPlaneChecks(h Host, cfg *kubeadm.InitConfiguration, manifestDir string) []Check {
	checks := []Check{
		NumCPU(h, ControlPlaneCPUs),
		Mem(h, ControlPlaneMemoryMB),
		Port(h, int(cfg.LocalAPIEndpoint.BindPort)),
		Port(h, SchedulerPort),
		Port(h, ControllerManagerPort),
		FileAvailable(h, filepath.Join(manifestDir, "kube-apiserver.yaml")),
		FileAvailable(h, filepath.Join(manifestDir, "kube-controller-manager.yaml")),
		FileAvailable(h, filepath.Join(manifestDir, "kube-scheduler.yaml")),
		HTTPProxy(h, cfg.AdvertiseIP),
	}
	if cfg.Etcd.External == nil {
		checks = append(checks,
			Port(h, EtcdClientPort), Port(h, EtcdPeerPort),
			FileAvailable(h, filepath.Join(manifestDir, "etcd.yaml")))
		if cfg.Etcd.Local != nil && cfg.Etcd.Local.DataDir != "" {
			checks = append(checks, DirAvailable(h, cfg.Etcd.Local.DataDir))
		}
	}
	if hostprocess.Enabled(cfg.FeatureGates) {
		checks = append(checks, HostProcessChecks(h, &cfg.ClusterConfiguration)...)
	}
	return checks
}
