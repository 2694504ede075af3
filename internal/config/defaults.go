package config

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// ControlPlaneTaint is the taint kubeadm puts on control-plane nodes when
// the configuration does not say otherwise.
var controlPlaneTaint = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}

// Environment gives the dynamic defaults the facts they need from the
// machine and the outside world. Every field must be set; Host returns the
// real ones.
type Environment struct {
	// Hostname returns the machine's host name.
	Hostname func() (string, error)
	// DefaultAddress returns the address of the interface that holds the
	// default route, the address the API server advertises by default.
	DefaultAddress func() (net.IP, error)
	// CRISocket finds the container runtime's socket on the machine.
	CRISocket func() (string, error)
	// ResolveVersion turns a version or release label into a version.
	ResolveVersion func(ctx context.Context, versionOrLabel string) (string, error)
	// NewToken returns a fresh random bootstrap token.
	NewToken func() (string, error)
	// Warn reports something the user should know but that does not fail.
	Warn func(format string, args ...any)
}

// DefaultOptions chooses which dynamic defaults to apply.
type DefaultOptions struct {
	// SkipAddress leaves an empty advertise address empty, for commands that
	// do not need it (listing images, printing).
	SkipAddress bool
	// SkipCRISocket leaves an empty CRI socket empty.
	SkipCRISocket bool
}

// InitConfiguration builds the defaulted internal init configuration from
// the documents of a file (docs may be nil: all defaults).
func (e Environment) InitConfiguration(ctx context.Context, docs *Documents, opts DefaultOptions) (*kubeadm.InitConfiguration, error) {
	init := &v1beta4.InitConfiguration{}
	cluster := &v1beta4.ClusterConfiguration{}
	if docs != nil && docs.Init != nil {
		init = docs.Init
	}
	if docs != nil && docs.Cluster != nil {
		cluster = docs.Cluster
	}
	// An explicitly empty token list still gets the one default token,
	// as with upstream kubeadm.
	if init.BootstrapTokens != nil && len(init.BootstrapTokens) == 0 {
		init.BootstrapTokens = nil
	}
	v1beta4.SetDefaults_InitConfiguration(init)
	v1beta4.SetDefaults_ClusterConfiguration(cluster)
	cfg := initToInternal(init, cluster)

	for i := range cfg.BootstrapTokens {
		if cfg.BootstrapTokens[i].Token != nil {
			continue
		}
		tok, err := e.newToken()
		if err != nil {
			return nil, err
		}
		cfg.BootstrapTokens[i].Token = tok
	}
	if err := e.nodeRegistration(&cfg.NodeRegistration, true, opts); err != nil {
		return nil, err
	}
	var err error
	if cfg.AdvertiseIP, err = e.advertiseAddress(&cfg.LocalAPIEndpoint, opts); err != nil {
		return nil, err
	}
	if err := e.cluster(ctx, &cfg.ClusterConfiguration); err != nil {
		return nil, err
	}
	defaultEndpointPort(&cfg.ClusterConfiguration, cfg.LocalAPIEndpoint.BindPort)
	e.componentConfigs(cfg, docs)
	return cfg, nil
}

// ClusterConfiguration builds a defaulted internal cluster configuration.
func (e Environment) ClusterConfiguration(ctx context.Context, docs *Documents) (*kubeadm.ClusterConfiguration, error) {
	cluster := &v1beta4.ClusterConfiguration{}
	if docs != nil && docs.Cluster != nil {
		cluster = docs.Cluster
	}
	v1beta4.SetDefaults_ClusterConfiguration(cluster)
	cfg := clusterToInternal(cluster)
	if err := e.cluster(ctx, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// JoinConfiguration builds the defaulted internal join configuration.
func (e Environment) JoinConfiguration(docs *Documents, opts DefaultOptions) (*kubeadm.JoinConfiguration, error) {
	join := &v1beta4.JoinConfiguration{}
	if docs != nil && docs.Join != nil {
		join = docs.Join
	}
	v1beta4.SetDefaults_JoinConfiguration(join)
	cfg := joinToInternal(join)
	if err := e.nodeRegistration(&cfg.NodeRegistration, cfg.ControlPlane != nil, opts); err != nil {
		return nil, err
	}
	if cfg.ControlPlane != nil {
		var err error
		if cfg.AdvertiseIP, err = e.advertiseAddress(&cfg.ControlPlane.LocalAPIEndpoint, opts); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// ResetConfiguration builds the defaulted internal reset configuration.
func (e Environment) ResetConfiguration(docs *Documents, opts DefaultOptions) (*kubeadm.ResetConfiguration, error) {
	reset := &v1beta4.ResetConfiguration{}
	if docs != nil && docs.Reset != nil {
		reset = docs.Reset
	}
	v1beta4.SetDefaults_ResetConfiguration(reset)
	cfg := resetToInternal(reset)
	cfg.CRISocket = e.socketURL(cfg.CRISocket)
	if cfg.CRISocket == "" && !opts.SkipCRISocket {
		sock, err := e.CRISocket()
		if err != nil {
			return nil, err
		}
		cfg.CRISocket = sock
	}
	return cfg, nil
}

// UpgradeConfiguration builds the defaulted internal upgrade configuration.
func (e Environment) UpgradeConfiguration(docs *Documents) *kubeadm.UpgradeConfiguration {
	up := &v1beta4.UpgradeConfiguration{}
	if docs != nil && docs.Upgrade != nil {
		up = docs.Upgrade
	}
	v1beta4.SetDefaults_UpgradeConfiguration(up)
	return upgradeToInternal(up)
}

func (e Environment) newToken() (*v1beta4.BootstrapTokenString, error) {
	s, err := e.NewToken()
	if err != nil {
		return nil, fmt.Errorf("generating a bootstrap token: %w", err)
	}
	return v1beta4.ParseBootstrapTokenString(s)
}

func (e Environment) nodeRegistration(nr *kubeadm.NodeRegistrationOptions, controlPlane bool, opts DefaultOptions) error {
	nr.Name = strings.ToLower(strings.TrimSpace(nr.Name))
	if nr.Name == "" {
		host, err := e.Hostname()
		if err != nil {
			return fmt.Errorf("finding the node name from the host name: %w", err)
		}
		nr.Name = strings.ToLower(strings.TrimSpace(host))
	}
	nr.CRISocket = e.socketURL(nr.CRISocket)
	if nr.CRISocket == "" && !opts.SkipCRISocket {
		sock, err := e.CRISocket()
		if err != nil {
			return err
		}
		nr.CRISocket = sock
	}
	if nr.Taints == nil && controlPlane {
		nr.Taints = []corev1.Taint{controlPlaneTaint}
	}
	return nil
}

// socketURL turns a bare socket path into a unix:// URL, as upstream still
// accepts (with a warning) for old configurations.
func (e Environment) socketURL(s string) string {
	if s == "" || strings.HasPrefix(s, "unix") {
		return s
	}
	fixed := "unix://" + strings.TrimPrefix(strings.TrimPrefix(s, "npipe://"), "unix://")
	e.Warn("the CRI socket %q has no unix:// scheme; using %q (write the URL form in your configuration)", s, fixed)
	return fixed
}

// advertiseAddress defaults ep's advertise address, writes it back in its
// canonical form ("010.0.0.1" is 10.0.0.1, as upstream's kubeadm takes it)
// and returns it parsed, for the configuration to carry as a value. It
// returns the zero Addr when the address stays empty (opts.SkipAddress).
func (e Environment) advertiseAddress(ep *kubeadm.APIEndpoint, opts DefaultOptions) (netip.Addr, error) {
	if ep.AdvertiseAddress != "" {
		ip := net.ParseIP(ep.AdvertiseAddress)
		if ip == nil {
			ip = parseIPv4LeadingZeros(ep.AdvertiseAddress)
		}
		if ip == nil {
			return netip.Addr{}, fmt.Errorf("the advertise address %q (localAPIEndpoint.advertiseAddress or --apiserver-advertise-address) is not an IPv4 or IPv6 address", ep.AdvertiseAddress)
		}
		if ip.IsLoopback() {
			return netip.Addr{}, fmt.Errorf("the advertise address %s is a loopback address, which other nodes cannot reach; use an address of a network interface", ep.AdvertiseAddress)
		}
		if !ip.IsUnspecified() {
			ep.AdvertiseAddress = ip.String()
			return addrOf(ip), nil
		}
		// 0.0.0.0 and :: mean "pick for me".
	}
	if opts.SkipAddress {
		return netip.Addr{}, nil
	}
	ip, err := e.DefaultAddress()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("choosing the address the API server advertises (set localAPIEndpoint.advertiseAddress or --apiserver-advertise-address): %w", err)
	}
	ep.AdvertiseAddress = ip.String()
	return addrOf(ip), nil
}

func (e Environment) cluster(ctx context.Context, c *kubeadm.ClusterConfiguration) error {
	requested := c.KubernetesVersion
	v, err := e.ResolveVersion(ctx, requested)
	if err != nil {
		return err
	}
	c.KubernetesVersion = v
	ParseAddresses(c)
	if version.IsCIVersion(requested) && c.ImageRepository == v1beta4.DefaultImageRepository {
		c.CIImageRepository = images.CIRepository
	}
	return CheckControlPlaneVersion(v)
}

// CheckControlPlaneVersion refuses control-plane versions older than one
// minor release before this kubeadm's own.
func CheckControlPlaneVersion(v string) error {
	parsed, err := utilversion.ParseSemantic(v)
	if err != nil {
		return fmt.Errorf("kubernetesVersion %q is not a valid version: %w", v, err)
	}
	own := utilversion.MustParseSemantic(version.KubernetesVersion)
	min := utilversion.MajorMinor(own.Major(), own.Minor()-1)
	if parsed.LessThan(min) {
		return fmt.Errorf("kubernetesVersion %s is too old: this kubeadm deploys control planes of version %d.%d.0 or newer", v, min.Major(), min.Minor())
	}
	return nil
}

// GenerateToken returns a new random bootstrap token.
func GenerateToken() (string, error) { return bootstraputil.GenerateBootstrapToken() }

// parseIPv4LeadingZeros accepts dotted IPv4 with leading zeros ("010.0.0.1"),
// which the standard library refuses but upstream kubeadm takes as decimal.
func parseIPv4LeadingZeros(s string) net.IP {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		if p == "" || len(p) > 3 {
			return nil
		}
		n := 0
		for _, c := range p {
			if c < '0' || c > '9' {
				return nil
			}
			n = n*10 + int(c-'0')
		}
		if n > 255 {
			return nil
		}
		b[i] = byte(n)
	}
	return net.IPv4(b[0], b[1], b[2], b[3])
}

// Node is a node's own part of the configuration it runs when it joins a
// cluster or is upgraded, in the internal form: what join's
// JoinConfiguration or the node's files say. The rest (cluster-wide
// settings, component configurations) comes from the cluster.
type Node struct {
	NodeRegistration kubeadm.NodeRegistrationOptions
	// LocalAPIEndpoint is the node's own API server; zero on a worker.
	LocalAPIEndpoint kubeadm.APIEndpoint
	// ControlPlane is true for a node that runs a control plane.
	ControlPlane   bool
	CertificateKey string
	Patches        *kubeadm.Patches
	Timeouts       *kubeadm.Timeouts
	DryRun         bool
	SkipPhases     []string
}

// JoinNode is the joining node's part of the JoinConfiguration j, as it is.
func JoinNode(j *kubeadm.JoinConfiguration) Node {
	n := Node{
		NodeRegistration: j.NodeRegistration,
		Patches:          j.Patches,
		Timeouts:         j.Timeouts,
		DryRun:           j.DryRun,
		SkipPhases:       j.SkipPhases,
	}
	if j.ControlPlane != nil {
		n.ControlPlane = true
		n.LocalAPIEndpoint = j.ControlPlane.LocalAPIEndpoint
		n.CertificateKey = j.ControlPlane.CertificateKey
	}
	return n
}

// NodeConfiguration builds the configuration a joining or upgraded node
// runs, as init's phases see it: the cluster's documents (the
// ClusterConfiguration and component configurations stored in the
// cluster; docs.Init is ignored) defaulted as init defaults them, with
// node's part. node is taken as it is, already in the internal form, with
// only the defaults it may still lack filled in (node registration, API
// endpoint and timeouts as init's, the CRI socket and, on a control-plane
// node, the advertise address found on the machine): it is not converted
// back to a file format and defaulted a second time. The result has no
// bootstrap token.
func (e Environment) NodeConfiguration(ctx context.Context, docs *Documents, node Node) (*kubeadm.InitConfiguration, error) {
	cc, err := e.ClusterConfiguration(ctx, docs)
	if err != nil {
		return nil, err
	}
	cfg := &kubeadm.InitConfiguration{
		ClusterConfiguration: *cc,
		DryRun:               node.DryRun,
		NodeRegistration:     node.NodeRegistration,
		LocalAPIEndpoint:     node.LocalAPIEndpoint,
		CertificateKey:       node.CertificateKey,
		SkipPhases:           node.SkipPhases,
		Patches:              node.Patches,
		Timeouts:             &kubeadm.Timeouts{},
	}
	if node.Timeouts != nil {
		t := *node.Timeouts
		cfg.Timeouts = &t
	}
	v1beta4.SetDefaults_NodeRegistration(&cfg.NodeRegistration)
	v1beta4.SetDefaults_APIEndpoint(&cfg.LocalAPIEndpoint)
	v1beta4.SetDefaults_Timeouts(cfg.Timeouts)
	if err := e.nodeRegistration(&cfg.NodeRegistration, node.ControlPlane, DefaultOptions{}); err != nil {
		return nil, err
	}
	if cfg.AdvertiseIP, err = e.advertiseAddress(&cfg.LocalAPIEndpoint, DefaultOptions{SkipAddress: !node.ControlPlane}); err != nil {
		return nil, err
	}
	e.componentConfigs(cfg, docs)
	return cfg, nil
}

// componentConfigs gives cfg the component configurations of docs (nil:
// none given), defaulted for its node.
func (e Environment) componentConfigs(cfg *kubeadm.InitConfiguration, docs *Documents) {
	if docs != nil {
		cfg.ComponentConfigs.Kubelet, cfg.ComponentConfigs.KubeletUserSupplied = docs.Kubelet, docs.Kubelet != nil
		cfg.ComponentConfigs.KubeProxy, cfg.ComponentConfigs.KubeProxyUserSupplied = docs.KubeProxy, docs.KubeProxy != nil
	}
	DefaultComponentConfigs(&cfg.ClusterConfiguration, cfg.AdvertiseIP, e.Warn)
}
