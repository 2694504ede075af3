package joinphases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Default locations, as upstream kubeadm uses them.
const (
	KubernetesDir = initphases.KubernetesDir
	ManifestsDir  = initphases.ManifestsDir
	KubeletDir    = initphases.KubeletDir

	// BootstrapKubeletConf is the kubelet's kubeconfig for its TLS
	// bootstrap, KubeletConf the one it writes when that is done.
	BootstrapKubeletConf = "bootstrap-kubelet.conf"
	KubeletConf          = "kubelet.conf"
	// TLSBootstrapUser names the bootstrap token's user in
	// bootstrap-kubelet.conf.
	TLSBootstrapUser = "tls-bootstrap-token-user"
)

// Data is what the join phases share. It is built once per run by the join
// command from the JoinConfiguration (file or flags), defaulted and
// validated; what comes from the cluster is fetched on first use.
type Data struct {
	Cfg *kubeadm.JoinConfiguration

	// Where output goes; under --dry-run into DryRunDir.
	KubeconfigDir string
	ManifestDir   string
	KubeletDir    string
	// CertDir overrides the cluster's certificatesDir when set (dry run).
	CertDir string
	// PatchesDir holds patch files ("" = none).
	PatchesDir string

	DryRun    bool
	DryRunDir string

	// IgnorePreflightErrors lists the preflight checks whose failure only
	// warns (lower case; "all" ignores every check).
	IgnorePreflightErrors sets.Set[string]

	// CertificateKey decrypts the kubeadm-certs Secret (control-plane join).
	CertificateKey string

	Out io.Writer
	Err io.Writer
	Now func() time.Time

	// Env supplies the host facts defaulting needs (host name, CRI socket,
	// addresses), as for the configuration file.
	Env config.Environment

	// Discover runs discovery (token or file) and returns the kubeconfig
	// the kubelet's TLS bootstrap uses: the cluster's CA and API server,
	// with the bootstrap token as credential. Called at most once.
	Discover func(ctx context.Context) (*clientcmdapi.Config, error)
	// NewClient makes a client from a kubeconfig; nil means client-go's.
	NewClient func(cfg *clientcmdapi.Config) (kubernetes.Interface, error)
	// KubeletHost restarts the kubelet service; nil means this machine.
	KubeletHost kubelet.Host

	tlsBootstrap *clientcmdapi.Config
	bootstrap    kubernetes.Interface
	initCfg      *kubeadm.InitConfiguration
	initView     *initphases.Data
}

// kubeletHost is KubeletHost, or this machine.
func (d *Data) kubeletHost() kubelet.Host {
	if d.KubeletHost != nil {
		return d.KubeletHost
	}
	return kubelet.OSHost{}
}

// now is the current time, from Now when set.
func (d *Data) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// IsControlPlane reports whether this node joins as a control-plane node.
func (d *Data) IsControlPlane() bool { return d.Cfg.ControlPlane != nil }

// ExternalEtcd reports whether the cluster's configuration, once fetched,
// names an external etcd.
func (d *Data) ExternalEtcd() bool { return d.initCfg != nil && d.initCfg.Etcd.External != nil }

// TLSBootstrapConfig runs discovery once and returns its kubeconfig.
func (d *Data) TLSBootstrapConfig(ctx context.Context) (*clientcmdapi.Config, error) {
	if d.tlsBootstrap != nil {
		return d.tlsBootstrap, nil
	}
	if d.Discover == nil {
		return nil, errors.New("joining: no discovery method is configured")
	}
	cfg, err := d.Discover(ctx)
	if err != nil {
		return nil, err
	}
	d.tlsBootstrap = cfg
	return cfg, nil
}

// BootstrapClient is a client with the TLS bootstrap credentials (the
// bootstrap token), for what a joining node may read before it has its own
// identity: the cluster's configuration, the kubelet's configuration, the
// kubeadm-certs Secret and Node objects.
func (d *Data) BootstrapClient(ctx context.Context) (kubernetes.Interface, error) {
	if d.bootstrap != nil {
		return d.bootstrap, nil
	}
	cfg, err := d.TLSBootstrapConfig(ctx)
	if err != nil {
		return nil, err
	}
	c, err := d.newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client with the bootstrap token: %w", err)
	}
	d.bootstrap = c
	return c, nil
}

func (d *Data) newClient(cfg *clientcmdapi.Config) (kubernetes.Interface, error) {
	if d.NewClient != nil {
		return d.NewClient(cfg)
	}
	return apiclient.FromConfig(cfg, apiCallTimeout(d.Cfg.Timeouts))
}

// InitConfig is the cluster's configuration as this node sees it: the
// ClusterConfiguration and KubeletConfiguration stored in the cluster,
// defaulted like an init configuration, with this node's registration and
// (control-plane join) API endpoint from the JoinConfiguration as it is.
// Fetched once.
func (d *Data) InitConfig(ctx context.Context) (*kubeadm.InitConfiguration, error) {
	if d.initCfg != nil {
		return d.initCfg, nil
	}
	c, err := d.BootstrapClient(ctx)
	if err != nil {
		return nil, err
	}
	docs, err := uploadconfig.FetchDocuments(ctx, c, apiCallTimeout(d.Cfg.Timeouts), uploadconfig.FetchOptions{})
	if err != nil {
		return nil, err
	}
	cfg, err := d.Env.NodeConfiguration(ctx, docs, config.JoinNode(d.Cfg))
	if err != nil {
		return nil, fmt.Errorf("the cluster's configuration: %w", err)
	}
	d.initCfg = cfg
	return cfg, nil
}

// InitView is the node seen as init sees one, so that the init phases that
// also make a joining control-plane node (certs, kubeconfig, control-plane,
// wait-control-plane, mark-control-plane) run unchanged on it.
func (d *Data) InitView(ctx context.Context) (*initphases.Data, error) {
	if d.initView != nil {
		return d.initView, nil
	}
	cfg, err := d.InitConfig(ctx)
	if err != nil {
		return nil, err
	}
	certDir := cfg.CertificatesDir
	if d.CertDir != "" {
		certDir = d.CertDir
	}
	v := &initphases.Data{
		Cfg:                   cfg,
		CertDir:               certDir,
		KubeconfigDir:         d.KubeconfigDir,
		ManifestDir:           d.ManifestDir,
		KubeletDir:            d.KubeletDir,
		PatchesDir:            d.PatchesDir,
		DryRun:                d.DryRun,
		DryRunDir:             d.DryRunDir,
		IgnorePreflightErrors: d.IgnorePreflightErrors,
		Out:                   d.Out,
		Err:                   d.Err,
		Now:                   d.Now,
	}
	// The cluster's admin.conf binding exists already: no need for the
	// authorization dance of init's first API call.
	v.NewClient = func(ctx context.Context) (kubernetes.Interface, error) {
		admin, timeout := filepath.Join(d.KubeconfigDir, "admin.conf"), apiCallTimeout(d.Cfg.Timeouts)
		if cfg.ControlPlaneEndpoint == "" && !d.DryRun {
			// Without a controlPlaneEndpoint (a cluster behind the
			// node-local balancer) admin.conf names this node's own API
			// server, which only runs once the control-plane and etcd
			// phases are done: reach the one discovery found instead.
			if kc, err := d.TLSBootstrapConfig(ctx); err == nil {
				if cluster := currentCluster(kc); cluster != nil && cluster.Server != "" {
					return apiclient.FromKubeconfigAt(admin, cluster.Server, timeout)
				}
			}
		}
		c, _, err := apiclient.FromKubeconfig(admin, timeout)
		return c, err
	}
	d.initView = v
	return v, nil
}

// apiCallTimeout is timeouts.kubernetesAPICall, or its default.
func apiCallTimeout(t *kubeadm.Timeouts) time.Duration {
	if t != nil && t.KubernetesAPICall != nil && t.KubernetesAPICall.Duration > 0 {
		return t.KubernetesAPICall.Duration
	}
	return v1beta4.DefaultKubernetesAPICall
}

// tlsBootstrapTimeout is timeouts.tlsBootstrap, or its default.
func tlsBootstrapTimeout(t *kubeadm.Timeouts) time.Duration {
	if t != nil && t.TLSBootstrap != nil && t.TLSBootstrap.Duration > 0 {
		return t.TLSBootstrap.Duration
	}
	return v1beta4.DefaultTLSBootstrap
}
