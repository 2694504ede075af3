package config

import (
	"context"
	"fmt"
	"net"
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
	if err := e.advertiseAddress(&cfg.LocalAPIEndpoint, opts); err != nil {
		return nil, err
	}
	if err := e.cluster(ctx, &cfg.ClusterConfiguration); err != nil {
		return nil, err
	}
	if docs != nil {
		cfg.ComponentConfigs.Kubelet, cfg.ComponentConfigs.KubeletUserSupplied = docs.Kubelet, docs.Kubelet != nil
		cfg.ComponentConfigs.KubeProxy, cfg.ComponentConfigs.KubeProxyUserSupplied = docs.KubeProxy, docs.KubeProxy != nil
	}
	DefaultComponentConfigs(&cfg.ClusterConfiguration, cfg.LocalAPIEndpoint.AdvertiseAddress, cfg.NodeRegistration.CRISocket)
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
		if err := e.advertiseAddress(&cfg.ControlPlane.LocalAPIEndpoint, opts); err != nil {
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
	if nr.Name == "" {
		host, err := e.Hostname()
		if err != nil {
			return fmt.Errorf("finding the node name from the host name: %w", err)
		}
		nr.Name = host
	}
	nr.Name = strings.ToLower(nr.Name)
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

func (e Environment) advertiseAddress(ep *kubeadm.APIEndpoint, opts DefaultOptions) error {
	if ep.AdvertiseAddress != "" || opts.SkipAddress {
		return nil
	}
	ip, err := e.DefaultAddress()
	if err != nil {
		return fmt.Errorf("choosing the address the API server advertises (set localAPIEndpoint.advertiseAddress or --apiserver-advertise-address): %w", err)
	}
	ep.AdvertiseAddress = ip.String()
	return nil
}

func (e Environment) cluster(ctx context.Context, c *kubeadm.ClusterConfiguration) error {
	requested := c.KubernetesVersion
	v, err := e.ResolveVersion(ctx, requested)
	if err != nil {
		return err
	}
	c.KubernetesVersion = v
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
