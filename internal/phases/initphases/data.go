package initphases

import (
	"context"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
)

// Default locations, as upstream kubeadm uses them.
const (
	KubernetesDir = "/etc/kubernetes"
	ManifestsDir  = "/etc/kubernetes/manifests"
	KubeletDir    = "/var/lib/kubelet"
)

// Data is what the init phases share. It is built once per run by the init
// command, from the configuration file and flags, fully defaulted and
// validated. Phases must treat Cfg as read-only except where documented.
type Data struct {
	Cfg *kubeadm.InitConfiguration

	// Where output goes. Under --dry-run they all point into DryRunDir.
	CertDir       string // certificates and keys (Cfg.CertificatesDir normally)
	KubeconfigDir string // admin.conf, kubelet.conf, ...
	ManifestDir   string // static pod manifests
	KubeletDir    string // kubelet config.yaml, kubeadm-flags.env, instance-config.yaml

	// KubeconfigPath is the admin kubeconfig the API phases use
	// (--kubeconfig of the phase commands; KubeconfigDir/admin.conf by default).
	KubeconfigPath string

	// PatchesDir holds patch files for the generated manifests ("" = none).
	PatchesDir string

	// DryRun makes phases write into DryRunDir and print what they wrote.
	DryRun    bool
	DryRunDir string

	// IgnorePreflightErrors lists the preflight checks whose failure only
	// warns (lower case; "all" ignores every check).
	IgnorePreflightErrors sets.Set[string]

	// EtcDir holds the passwd, group and login.defs files the
	// RootlessControlPlane feature gate adds the components' users to
	// ("" means /etc). Rootless caches those users once made or read.
	EtcDir   string
	Rootless *rootless.Accounts
	// EtcdAccount caches the etcd user of the CISHardening feature gate
	// once made or read.
	EtcdAccount *rootless.IDs
	// HardeningRoot roots the fixed paths of the CISHardening profile
	// (audit policy, admission configuration, audit log folder, the
	// approver's program) for tests; "" is the real "/". Manifests always
	// name the real paths.
	HardeningRoot string
	// Executable is the kubeadm program the profile's approver runs (""
	// means this one, os.Executable).
	Executable string

	// EtcdInitialCluster, when set, writes an etcd manifest that joins an
	// existing etcd cluster (see staticpod.Node); "kubeadm join" sets it.
	EtcdInitialCluster string

	// KubeletHeadStart is set by "kubeadm init" when its run reaches the
	// certs/ca, kubeconfig/kubelet and kubelet-start phases: on a fresh
	// node the kubelet is then started right after the cluster CA is made
	// (see kubeletHeadStart).
	KubeletHeadStart bool

	// UploadCerts and SkipCertificateKeyPrint come from flags of the same names.
	UploadCerts             bool
	SkipCertificateKeyPrint bool
	SkipTokenPrint          bool

	// KubeadmPath is the kubeadm binary the certificate renewal's timer
	// runs ("": certrenewal.KubeadmPath). SystemRoot prefixes the paths
	// of the renewal's files outside kubeadm's folders ("": /).
	KubeadmPath string
	SystemRoot  string

	// InitSystem runs systemctl for the units of a control plane of host
	// processes (HostProcessControlPlane; nil: this machine). LookPath
	// finds their programs (nil: exec.LookPath). Their units go under
	// SystemRoot.
	InitSystem kubelet.Host
	LookPath   func(file string) (string, error)

	// Out receives the phases' progress messages, Err their warnings.
	Out io.Writer
	Err io.Writer
	// Now is the clock certificates are dated by.
	Now func() time.Time

	// NewClient makes the API client the API phases share (see Client);
	// nil means admin.conf in KubeconfigDir.
	NewClient func(ctx context.Context) (kubernetes.Interface, error)
	client    kubernetes.Interface
}
