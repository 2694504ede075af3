package cis

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
)

// Gate is the feature gate of ClusterConfiguration.featureGates that turns
// the profile on. It is stored with the ClusterConfiguration in the
// kubeadm-config ConfigMap, so joins and upgrades keep it.
const Gate = "CISHardening"

// Enabled reports whether gates turn the profile on (it is off by default).
func Enabled(gates map[string]bool) bool { return gates[Gate] }

// Files and folders the profile adds on a control-plane node. The
// manifests name these paths, also in a dry run.
const (
	// AuditPolicyFile is the API server's audit policy (--audit-policy-file).
	AuditPolicyFile = "/etc/kubernetes/audit-policy.yaml"
	// AdmissionConfigFile configures the API server's admission plugins
	// (--admission-control-config-file): the EventRateLimit limits.
	AdmissionConfigFile = "/etc/kubernetes/admission-control.yaml"
	// AuditLogDir holds the API server's audit log and its rotated copies.
	AuditLogDir = "/var/log/kubernetes/audit"
	// ApproverKubeconfigFile names the kubelet serving certificate
	// approver's credential (as "certs check-expiration" lists it); the
	// file is in ApproverKubeconfigDir (see ApproverKubeconfig).
	ApproverKubeconfigFile = "kubelet-serving-approver.conf"
	// ApproverKubeconfigDir, in the kubeconfig folder, holds the
	// approver's kubeconfig file alone. The approver's Pod mounts the
	// folder, not the file: a file's own mount keeps showing the file it
	// was made of once kubeadm replaces it (each write is a rename), so
	// the approver would never see a renewed credential.
	ApproverKubeconfigDir = "kubelet-serving-approver"
	// ApproverBinary is the copy of kubeadm the approver's static Pod runs.
	ApproverBinary = kubeadmbinary.Path
)

// ApproverKubeconfig is the path of the approver's kubeconfig file under
// the kubeconfig folder kubeconfigDir.
func ApproverKubeconfig(kubeconfigDir string) string {
	return filepath.Join(kubeconfigDir, ApproverKubeconfigDir, ApproverKubeconfigFile)
}

// LegacyApproverKubeconfig is where the approver's kubeconfig file was
// before it had a folder of its own: upgrade moves it, reset removes it.
func LegacyApproverKubeconfig(kubeconfigDir string) string {
	return filepath.Join(kubeconfigDir, ApproverKubeconfigFile)
}

// AuditLogFile is the API server's audit log (--audit-log-path).
func AuditLogFile() string { return filepath.Join(AuditLogDir, "audit.log") }

// Modes the profile gives files that kubeadm otherwise writes with others.
const (
	// FileMode is the mode of every certificate, of the kubelet's
	// config.yaml and of the profile's own files: 0600, as 1.1.20 of CIS
	// v1.10 asks of certificates (v1.12 and 4.1.7 accept 0644) and 4.1.9
	// of config.yaml.
	FileMode os.FileMode = 0o600
	// AuditLogDirMode is the mode of the audit log folder.
	AuditLogDirMode os.FileMode = 0o700
	// EtcdDataDirMode is the etcd data folder's mode (1.1.11).
	EtcdDataDirMode os.FileMode = 0o700
)

// EtcdUser names the user and the group that own the etcd data folder and
// that etcd runs as: kube-bench compares the folder's owner with the
// literal "etcd:etcd" (1.1.12).
const EtcdUser = "etcd"

// EtcdUserComment marks, in the GECOS field of /etc/passwd, an etcd user
// that kubeadm made: "kubeadm reset" removes only that one, never an etcd
// user the distribution or the administrator made.
const EtcdUserComment = "etcd, made by kubeadm (CISHardening)"

// The audit log's rotation: days, files and megabytes (1.2.17 to 1.2.19).
const (
	AuditLogMaxAge    = "30"
	AuditLogMaxBackup = "10"
	AuditLogMaxSize   = "100"
)

// TerminatedPodGCThreshold is the controller manager's
// --terminated-pod-gc-threshold (1.3.1 asks for one; the default, 12500,
// lets finished Pods pile up in etcd). 1000 keeps recent finished Pods of
// Jobs and tests readable; see docs/decisions.
const TerminatedPodGCThreshold = "1000"

// PodPidsLimit is the kubelet's podPidsLimit when the configuration sets
// none (4.2.13).
const PodPidsLimit int64 = 4096

// CipherSuites are the TLS 1.2 suites the API server and the kubelets
// accept (1.2.29, 4.2.12): ECDHE with AES-GCM or ChaCha20-Poly1305 only,
// named as both components' --tls-cipher-suites know them and as both
// checks list them. TLS 1.3 suites are not configurable and always on.
func CipherSuites() []string {
	return []string{
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
	}
}

// Admission plugins the profile turns on besides kubeadm's NodeRestriction:
// DenyServiceExternalIPs (1.2.3) and EventRateLimit (1.2.9), which needs
// AdmissionConfigFile.
const (
	AdmissionPlugins                 = "NodeRestriction,DenyServiceExternalIPs,EventRateLimit"
	AdmissionPluginsWithoutRateLimit = "NodeRestriction,DenyServiceExternalIPs"
)

// APIServerFlags are the flags the profile gives the API server, by name;
// certificatesDir holds the cluster CA that signs the kubelets' serving
// certificates. The user's extra arguments still override each of them.
func APIServerFlags(certificatesDir string) map[string]string {
	return map[string]string{
		"profiling":                     "false",
		"audit-log-path":                AuditLogFile(),
		"audit-log-maxage":              AuditLogMaxAge,
		"audit-log-maxbackup":           AuditLogMaxBackup,
		"audit-log-maxsize":             AuditLogMaxSize,
		"audit-policy-file":             AuditPolicyFile,
		"kubelet-certificate-authority": filepath.Join(certificatesDir, "ca.crt"),
		"tls-cipher-suites":             strings.Join(CipherSuites(), ","),
		"enable-admission-plugins":      AdmissionPlugins,
		"admission-control-config-file": AdmissionConfigFile,
		// 1.2.30: projected service-account tokens are not extended to a
		// year for the sake of old clients.
		"service-account-extend-token-expiration": "false",
	}
}

// ControllerManagerFlags are the profile's flags of the controller manager.
func ControllerManagerFlags() map[string]string {
	return map[string]string{
		"profiling":                   "false",
		"terminated-pod-gc-threshold": TerminatedPodGCThreshold,
	}
}

// SchedulerFlags are the profile's flags of the scheduler.
func SchedulerFlags() map[string]string {
	return map[string]string{"profiling": "false"}
}
