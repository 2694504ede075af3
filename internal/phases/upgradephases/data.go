package upgradephases

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// Data is what the phases of "kubeadm upgrade apply" and "kubeadm upgrade
// node" share. The command builds it once: the cluster's configuration
// read from the API server, set to the target version, with this node's
// registration read from its files.
type Data struct {
	// Apply is true for "upgrade apply" (the first control-plane node, a
	// new version), false for "upgrade node" (the cluster's version).
	Apply bool
	// Cfg is the configuration the upgraded node runs: the cluster's,
	// at the target version, with this node's registration.
	Cfg *kubeadm.InitConfiguration
	// Upgrade holds the settings of the command (UpgradeConfiguration).
	Upgrade *kubeadm.UpgradeConfiguration
	// Node is what this node's files say about it.
	Node *upgrade.LocalNode
	// Policy is the version skew check of apply (nil for node).
	Policy *upgrade.VersionPolicy

	KubernetesDir, ManifestDir, KubeletDir, CertDir string
	// SystemRoot prefixes the unit folder of a control plane of host
	// processes ("" means /).
	SystemRoot string
	// KubeconfigPath is the kubeconfig the client uses.
	KubeconfigPath string
	PatchesDir     string

	DryRun, Force, Yes bool
	// DryRunDir receives, under --dry-run, the files the upgrade would
	// write (manifests, the kubelet's files), flat as init's dry-run
	// folder; "" writes none.
	DryRunDir                string
	EtcdUpgrade, CertRenewal bool
	ImagePullPolicy          string
	ImagePullSerial          bool
	IgnorePreflightErrors    sets.Set[string]
	Out, Err                 io.Writer
	// Confirm prints question and tells whether the user answered yes.
	Confirm      func(question string) bool
	Now          func() time.Time
	Host         preflight.Host
	Service      kubelet.Host
	Client       kubernetes.Interface
	DialCRI      func(ctx context.Context, endpoint string) (cri.Runtime, error)
	EtcdSnapshot func(ctx context.Context, d *Data, path string) error
	// EtcdMembers counts the members of the cluster of this node's etcd
	// member; nil: unknown (a rollback then keeps the data of an etcd
	// that upgraded fine).
	EtcdMembers func(ctx context.Context, d *Data) (int, error)
	initView    *initphases.Data
	state       *upgrade.ClusterState
	skipped     bool
}

// TmpDir is where backups go (/etc/kubernetes/tmp).
func (d *Data) TmpDir() string { return filepath.Join(d.KubernetesDir, "tmp") }

// Version is the target version.
func (d *Data) Version() string { return d.Cfg.KubernetesVersion }

// InitView is the node seen as the init phases see one, so that their
// upload-config, bootstrap-token and addon phases and their manifests run
// unchanged. Node must be set.
func (d *Data) InitView() *initphases.Data {
	if d.initView != nil {
		return d.initView
	}
	v := &initphases.Data{
		Cfg:            d.Cfg,
		CertDir:        d.CertDir,
		KubeconfigDir:  d.KubernetesDir,
		ManifestDir:    d.ManifestDir,
		KubeletDir:     d.KubeletDir,
		KubeconfigPath: d.KubeconfigPath,
		PatchesDir:     d.PatchesDir,
		DryRun:         d.DryRun,
		SkipTokenPrint: true,
		// Kept from the node's etcd manifest, which then only changes
		// where the upgrade changes it.
		EtcdInitialCluster: d.Node.EtcdInitialCluster,
		SystemRoot:         d.SystemRoot,
		InitSystem:         d.Service,
		Out:                d.Out,
		Err:                d.Err,
		Now:                d.Now,
		NewClient: func(context.Context) (kubernetes.Interface, error) {
			return d.Client, nil
		},
	}
	if d.Host != nil {
		v.LookPath = d.Host.LookPath
	}
	d.initView = v
	return v
}

// ClusterState is what runs in the cluster, asked once.
func (d *Data) ClusterState(ctx context.Context) (*upgrade.ClusterState, error) {
	if d.state != nil {
		return d.state, nil
	}
	s, err := upgrade.ReadClusterState(ctx, d.Client)
	if err != nil {
		return nil, err
	}
	d.state = s
	return s, nil
}
