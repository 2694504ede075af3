package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Machine supplies the defaults that depend on the machine a
// configuration is for. A zero field takes the value in its comment.
type Machine struct {
	// NodeName is the node's name where nodeRegistration.name is empty
	// (default "node").
	NodeName string
	// AdvertiseAddress is the API server's address where
	// localAPIEndpoint.advertiseAddress is empty (default 192.0.2.1, an
	// address reserved for documentation).
	AdvertiseAddress netip.Addr
	// CRISocket is the container runtime's socket where
	// nodeRegistration.criSocket is empty (default
	// unix:///var/run/containerd/containerd.sock).
	CRISocket string
	// ResolveVersion turns a release label ("stable", "stable-1", "latest")
	// into a version. By default a label stands for the Kubernetes version
	// this package deploys (KubernetesVersion), as kubeadm does when it
	// cannot reach dl.k8s.io.
	ResolveVersion func(ctx context.Context, label string) (string, error)
	// Warn receives what kubeadm would print as a warning (deprecated
	// fields, risky values). Default: warnings are dropped.
	Warn func(msg string)
}

// KubernetesVersion is the Kubernetes version this kubeadm deploys by
// default.
const KubernetesVersion = version.KubernetesVersion

// Configuration is a loaded file: each kubeadm document it held, defaulted
// and validated, in its v1beta4 form, and the component configurations as
// written. A kind the file did not hold is nil.
type Configuration struct {
	Init    *v1beta4.InitConfiguration
	Cluster *v1beta4.ClusterConfiguration
	Join    *v1beta4.JoinConfiguration
	Reset   *v1beta4.ResetConfiguration
	Upgrade *v1beta4.UpgradeConfiguration

	Kubelet   *kubeletv1beta1.KubeletConfiguration
	KubeProxy *kubeproxyv1alpha1.KubeProxyConfiguration
}

// ErrInvalid is wrapped by every error that is about the configuration
// itself (it does not decode, a field is unknown or repeated, a value does
// not validate); kubeadm exits with code 3 on such an error.
var ErrInvalid = errors.New("invalid configuration")

// LoadFile reads, defaults and validates the configuration file at path.
func LoadFile(ctx context.Context, path string, m Machine) (*Configuration, error) {
	docs, err := config.ReadFile(path, config.Strict)
	if err != nil {
		return nil, classify(err)
	}
	return load(ctx, docs, m)
}

// Load is LoadFile for a file's content; source names it in errors.
func Load(ctx context.Context, source string, data []byte, m Machine) (*Configuration, error) {
	docs, err := config.Decode(data, config.Strict)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", source, ErrInvalid, err)
	}
	docs.Source = source
	return load(ctx, docs, m)
}

// ValidateFile reports whether the file at path is a valid kubeadm
// configuration, as `kubeadm config validate --config path` does.
func ValidateFile(ctx context.Context, path string, m Machine) error {
	_, err := LoadFile(ctx, path, m)
	return err
}

func load(ctx context.Context, docs *config.Documents, m Machine) (*Configuration, error) {
	env := m.environment()
	for _, w := range append(docs.Warnings, docs.Deprecations...) {
		env.Warn("%s: %s", docs.Source, w)
	}
	v, errs, err := env.ValidateDocuments(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", docs.Source, ErrInvalid, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w: %w", docs.Source, ErrInvalid, errs.ToAggregate())
	}
	out := &Configuration{Kubelet: docs.Kubelet, KubeProxy: docs.KubeProxy}
	if v.Init != nil {
		out.Init, out.Cluster = config.InitToV1beta4(v.Init)
		if docs.Init == nil {
			out.Init = nil
		}
	}
	if v.Join != nil {
		out.Join = config.JoinToV1beta4(v.Join)
	}
	if v.Reset != nil {
		out.Reset = config.ResetToV1beta4(v.Reset)
	}
	if v.Upgrade != nil {
		out.Upgrade = config.UpgradeToV1beta4(v.Upgrade)
	}
	return out, nil
}

// classify marks decoding errors as invalid input; a file that cannot be
// read stays a plain error.
func classify(err error) error {
	if exitcode.Of(err) == exitcode.Validation {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

func (m Machine) environment() config.Environment {
	name := m.NodeName
	if name == "" {
		name = "node"
	}
	addr := m.AdvertiseAddress
	if !addr.IsValid() {
		addr = netip.MustParseAddr("192.0.2.1")
	}
	sock := m.CRISocket
	if sock == "" {
		sock = "unix:///var/run/containerd/containerd.sock"
	}
	resolve := m.ResolveVersion
	if resolve == nil {
		resolve = func(_ context.Context, v string) (string, error) {
			if version.IsLabel(v) || v == "" {
				return KubernetesVersion, nil
			}
			return v, nil
		}
	}
	warn := m.Warn
	return config.Environment{
		Hostname:       func() (string, error) { return name, nil },
		DefaultAddress: func() (net.IP, error) { return net.IP(addr.AsSlice()), nil },
		CRISocket:      func() (string, error) { return sock, nil },
		ResolveVersion: resolve,
		NewToken:       config.GenerateToken,
		Warn: func(format string, args ...any) {
			if warn != nil {
				warn(fmt.Sprintf(format, args...))
			}
		},
	}
}
