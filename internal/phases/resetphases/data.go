package resetphases

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
)

// Default locations, as upstream kubeadm uses them.
const (
	KubernetesDir = "/etc/kubernetes"
	ManifestsDir  = "/etc/kubernetes/manifests"
	KubeletDir    = "/var/lib/kubelet"
	TmpDir        = "/etc/kubernetes/tmp"
	CNIConfigDir  = "/etc/cni/net.d"
)

// Data is what the reset phases share, built once per run from the
// ResetConfiguration (file or flags). Everything the phases do to the
// machine goes through the injected fields, so tests can watch it.
type Data struct {
	Cfg *kubeadm.ResetConfiguration

	KubernetesDir string
	ManifestDir   string
	KubeletDir    string
	// CertDir is the certificates folder to empty (--cert-dir or
	// certificatesDir).
	CertDir string
	// KubeconfigPath reaches the cluster, to remove this node's etcd member.
	KubeconfigPath string
	// EtcDir holds the passwd and group files the users of a rootless
	// control plane are removed from ("" means /etc).
	EtcDir string
	// SystemRoot prefixes the paths of the certificate renewal's files
	// and of the control plane's units outside kubeadm's folders ("" means
	// /).
	SystemRoot string
	// ApproverBinary is the copy of kubeadm the CISHardening profile's
	// approver runs (cis.ApproverBinary; "" looks for none).
	ApproverBinary string

	DryRun bool
	Force  bool
	// CleanupNetwork also removes the CNI configuration and kube-proxy's
	// packet-filter rules, which upstream kubeadm leaves to the user.
	CleanupNetwork bool

	IgnorePreflightErrors sets.Set[string]

	Out io.Writer
	Err io.Writer
	// Confirm prints question and tells whether the user answered yes.
	Confirm func(question string) bool

	// Host is the machine as preflight checks see it.
	Host preflight.Host
	// Service drives the kubelet's service.
	Service kubelet.Host
	// Mounts lists mount points; Unmount unmounts one.
	Mounts  func() ([]string, error)
	Unmount func(path string, flags int) error
	// DialCRI connects to the container runtime.
	DialCRI func(ctx context.Context, endpoint string) (cri.Runtime, error)
	// NewClient makes a client from a kubeconfig file.
	NewClient func(path string) (kubernetes.Interface, error)
	// Run runs a program and returns its output (iptables-save, ...).
	Run func(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)

	// emptiedEtcdDir is the etcd data folder remove-etcd-member emptied in
	// this run. The kubelet may restart the etcd container before
	// cleanup-node stops it, and that etcd writes its files again; so
	// cleanup-node empties the folder once more when the pods are gone.
	emptiedEtcdDir string
}

// renewalSchedule is the automatic certificate renewal of the node.
func (d *Data) renewalSchedule() certrenewal.Schedule {
	return certrenewal.Schedule{Host: d.Service, Root: d.SystemRoot, Out: d.Out}
}

// units are the systemd units of a control plane of host processes.
func (d *Data) units() hostprocess.Units {
	return hostprocess.Units{Host: d.Service, Root: d.SystemRoot, Out: d.Out}
}

// ProcMounts lists the mount points of this process's mount namespace from
// /proc/self/mountinfo (octal escapes decoded), as Data.Mounts.
func ProcMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		out = append(out, unescapeMountPath(fields[4]))
	}
	return out, sc.Err()
}

// unescapeMountPath decodes the \ooo escapes of mountinfo paths.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
