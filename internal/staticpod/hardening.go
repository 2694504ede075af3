package staticpod

import (
	"maps"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// Volumes of the CISHardening profile.
const (
	volumeAuditPolicy     = "audit-policy"
	volumeAuditLog        = "audit-log"
	volumeAdmissionConfig = "admission-control"
	volumeApproverBinary  = "kubeadm"
	volumeApproverConfig  = "kubeconfig"
)

// hardened reports whether c turns the CISHardening profile on.
func hardened(c *kubeadm.ClusterConfiguration) bool { return cis.Enabled(c.FeatureGates) }

// hardenAPIServer adds the profile's flags to flags (kubeadm's own, which
// the user's extra arguments override) and mounts the audit policy, the
// audit log folder (read-write) and the admission configuration. When the
// user names an admission configuration file of their own, kubeadm's is
// neither mounted nor enabled, and EventRateLimit, which cannot start
// without its limits, is left out of the admission plugins.
func hardenAPIServer(c *kubeadm.ClusterConfiguration, flags map[string]string, vs volumeSet, o Options) {
	maps.Copy(flags, cis.APIServerFlags(c.CertificatesDir))
	own := args{extra: c.APIServer.ExtraArgs}
	if _, ok := own.value("admission-control-config-file"); ok {
		flags["enable-admission-plugins"] = cis.AdmissionPluginsWithoutRateLimit
		o.warn("the API server's admission configuration is the extra argument admission-control-config-file: the CISHardening profile leaves EventRateLimit off, as it needs its own configuration")
	} else {
		vs.add(volumeAdmissionConfig, cis.AdmissionConfigFile, cis.AdmissionConfigFile, true, corev1.HostPathFile)
	}
	vs.add(volumeAuditPolicy, cis.AuditPolicyFile, cis.AuditPolicyFile, true, corev1.HostPathFile)
	vs.add(volumeAuditLog, cis.AuditLogDir, cis.AuditLogDir, false, corev1.HostPathDirectoryOrCreate)
}

// Names of the kubelet serving certificate approver's static Pod.
const (
	// KubeletServingApprover names its Pod, container and manifest file.
	KubeletServingApprover = "kubeadm-kubelet-serving-approver"
	// ApproverCommand is the hidden kubeadm command the Pod runs.
	ApproverCommand = "kubelet-serving-approver"
	// AnnotationApproverBinary records on the Pod the SHA-256 of the
	// kubeadm program it runs, so that a new program restarts it.
	AnnotationApproverBinary = "kubeadm.kubernetes.io/kubeadm-sha256"
)

// KubeletServingApproverPod returns the static Pod of the CISHardening
// profile that approves the kubelets' serving certificates (see package
// csrapprover): kubeadm itself (the copy at cis.ApproverBinary, whose
// SHA-256 is binarySum) run inside the pause image, a statically linked
// program needing nothing else, as root without any capability and on a
// read-only root, with its kubeconfig from the kubeconfig folder. It talks
// to the API server of its node, like the controller manager.
func KubeletServingApproverPod(c *kubeadm.ClusterConfiguration, binarySum string) *corev1.Pod {
	kubeconfig := cis.ApproverKubeconfig(KubernetesDir)
	vs := volumeSet{}
	vs.add(volumeApproverBinary, cis.ApproverBinary, cis.ApproverBinary, true, corev1.HostPathFile)
	// Its folder, so that the approver sees the file replaced.
	dir := filepath.Dir(kubeconfig)
	vs.add(volumeApproverConfig, dir, dir, true, corev1.HostPathDirectory)
	vols, mounts := vs.sorted()
	container := corev1.Container{
		Name:         KubeletServingApprover,
		Image:        images.PauseImage(c),
		Command:      []string{cis.ApproverBinary, ApproverCommand, "--kubeconfig=" + kubeconfig},
		Resources:    requests("10m", ""),
		VolumeMounts: mounts,
		SecurityContext: &corev1.SecurityContext{
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
		},
	}
	return componentPod(container, vols, map[string]string{AnnotationApproverBinary: binarySum})
}
