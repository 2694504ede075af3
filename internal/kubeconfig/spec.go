package kubeconfig

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Names of the kubeconfig files of a control-plane node.
const (
	AdminFile             = "admin.conf"
	SuperAdminFile        = "super-admin.conf"
	KubeletFile           = "kubelet.conf"
	ControllerManagerFile = "controller-manager.conf"
	SchedulerFile         = "scheduler.conf"
)

// Identities the control-plane kubeconfig files authenticate as: the user
// names (certificate CommonNames) and groups (Organizations).
const (
	AdminUser             = "kubernetes-admin"
	AdminGroup            = "kubeadm:cluster-admins"
	SuperAdminUser        = "kubernetes-super-admin"
	SuperAdminGroup       = "system:masters"
	NodeUserPrefix        = "system:node:"
	NodesGroup            = "system:nodes"
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
)

// ControlPlaneFiles lists the files "kubeadm init" writes, in the order it
// writes them.
func ControlPlaneFiles() []string {
	return []string{AdminFile, SuperAdminFile, KubeletFile, ControllerManagerFile, SchedulerFile}
}

// Spec describes one kubeconfig: which cluster it reaches, where, and as
// whom.
type Spec struct {
	// FileName is the file's name in the kubeconfig folder. It is empty
	// for a kubeconfig that is only printed.
	FileName string
	// ClusterName names the cluster entry.
	ClusterName string
	// Server is the API server URL, "https://host:port".
	Server string
	// ClientName is the user: the client certificate's CommonName and the
	// name of the user entry.
	ClientName string
	// Organizations are the client certificate's groups.
	Organizations []string
	// Token, when set, authenticates the user instead of a client
	// certificate; Organizations are then unused.
	Token string
}

// ContextName is the name of the spec's only context, "user@cluster".
func (s Spec) ContextName() string { return s.ClientName + "@" + s.ClusterName }

// LocalAPIServerURL returns the URL of this node's own API server,
// "https://advertiseAddress:bindPort", with IPv6 addresses in brackets:
// cfg.AdvertiseIP (as package config parsed it) and the bind port of
// cfg.LocalAPIEndpoint.
func LocalAPIServerURL(cfg *kubeadm.InitConfiguration) (string, error) {
	ip, ep := cfg.AdvertiseIP, cfg.LocalAPIEndpoint
	if !ip.IsValid() {
		return "", fmt.Errorf("the advertise address %q is not an IP address", ep.AdvertiseAddress)
	}
	if ep.BindPort < 1 || ep.BindPort > 65535 {
		return "", fmt.Errorf("the API server bind port %d is not from 1 to 65535", ep.BindPort)
	}
	return "https://" + netip.AddrPortFrom(ip, uint16(ep.BindPort)).String(), nil
}

// ControlPlaneURL returns the URL clients use to reach the cluster's API
// servers: controlPlaneEndpoint when set, else this node's own API server.
// A controlPlaneEndpoint without a port (or with an empty one, "host:") gets
// the local bind port; one with a different port keeps its own, and warn
// (when not nil) is told so. Host and port are kept as written. The
// endpoint is cfg.Endpoint, as package config parsed it; the node's own
// API server is cfg's.
func ControlPlaneURL(cfg *kubeadm.InitConfiguration, warn func(format string, args ...any)) (string, error) {
	cpe := cfg.ControlPlaneEndpoint
	if cpe == "" {
		return LocalAPIServerURL(cfg)
	}
	bindPort := strconv.Itoa(int(cfg.LocalAPIEndpoint.BindPort))
	host, port := cfg.Endpoint.Host, cfg.Endpoint.Port
	switch {
	case port == "":
		port = bindPort
	case port != bindPort && warn != nil:
		warn("the port of controlPlaneEndpoint %q takes precedence over the API server bind port %s in the control-plane address", cpe, bindPort)
	}
	// Join and upgrade take the endpoint from the cluster without
	// validating it again, and the bind port may be the bad one.
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("controlPlaneEndpoint %q: the port %q is not a number from 1 to 65535", cpe, port)
	}
	if !cfg.Endpoint.IsIP() && len(k8svalidation.IsDNS1123Subdomain(host)) > 0 {
		return "", fmt.Errorf("controlPlaneEndpoint %q: the host %q is neither an IP address nor a DNS name", cpe, host)
	}
	return "https://" + net.JoinHostPort(host, port), nil
}

// ControlPlaneSpec returns the spec of one of the ControlPlaneFiles for the
// first control-plane node described by cfg. admin.conf and
// super-admin.conf reach the cluster through controlPlaneEndpoint (when
// set); kubelet.conf, controller-manager.conf and scheduler.conf talk to
// this node's own API server. warn may be nil.
func ControlPlaneSpec(fileName string, cfg *kubeadm.InitConfiguration, warn func(format string, args ...any)) (Spec, error) {
	s := Spec{FileName: fileName, ClusterName: cfg.ClusterName}
	var err error
	switch fileName {
	case AdminFile:
		s.ClientName, s.Organizations = AdminUser, []string{AdminGroup}
		s.Server, err = ControlPlaneURL(cfg, warn)
	case SuperAdminFile:
		s.ClientName, s.Organizations = SuperAdminUser, []string{SuperAdminGroup}
		s.Server, err = ControlPlaneURL(cfg, warn)
	case KubeletFile:
		if cfg.NodeRegistration.Name == "" {
			return Spec{}, fmt.Errorf("%s: the node name is not set", fileName)
		}
		s.ClientName, s.Organizations = NodeUserPrefix+cfg.NodeRegistration.Name, []string{NodesGroup}
		s.Server, err = LocalAPIServerURL(cfg)
	case ControllerManagerFile:
		s.ClientName = ControllerManagerUser
		s.Server, err = LocalAPIServerURL(cfg)
	case SchedulerFile:
		s.ClientName = SchedulerUser
		s.Server, err = LocalAPIServerURL(cfg)
	default:
		return Spec{}, fmt.Errorf("%q is not a control-plane kubeconfig file", fileName)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", fileName, err)
	}
	return s, nil
}

// ControlPlaneSpecs returns the specs of all ControlPlaneFiles, in order.
func ControlPlaneSpecs(cfg *kubeadm.InitConfiguration, warn func(format string, args ...any)) ([]Spec, error) {
	specs := make([]Spec, 0, len(ControlPlaneFiles()))
	for _, name := range ControlPlaneFiles() {
		s, err := ControlPlaneSpec(name, cfg, warn)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return specs, nil
}
