package initphases

import "github.com/kubeadm-go/kubeadm/internal/workflow"

// Phases returns the init workflow, in the order upstream kubeadm runs it.
func Phases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		PreflightPhase(),
		CertsPhase(),
		KubeconfigPhase(),
		EtcdPhase(),
		ControlPlanePhase(),
		KubeletStartPhase(),
		WaitControlPlanePhase(),
		UploadConfigPhase(),
		UploadCertsPhase(),
		MarkControlPlanePhase(),
		BootstrapTokenPhase(),
		KubeletFinalizePhase(),
		AddonPhase(),
		ShowJoinCommandPhase(),
	}
}
