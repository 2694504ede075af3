package initphases

import "github.com/kubeadm-go/kubeadm/internal/workflow"

// Phases returns the init workflow, in the order upstream kubeadm runs it.
// On a fresh node the kubelet gets a head start (see kubeletHeadStart).
func Phases() []workflow.Phase[*Data] {
	hs := &kubeletHeadStart{}
	return []workflow.Phase[*Data]{
		PreflightPhase(),
		certsPhase(nil, hs),
		kubeconfigPhase(hs),
		EtcdPhase(),
		ControlPlanePhase(),
		kubeletStartPhase(hs, osKubeletStartHost()),
		WaitControlPlanePhase(),
		UploadConfigPhase(),
		UploadCertsPhase(),
		MarkControlPlanePhase(),
		BootstrapTokenPhase(),
		KubeletFinalizePhase(),
		AddonPhase(),
		SelfHostingPhase(),
		CertsRenewalPhase(),
		ShowJoinCommandPhase(),
	}
}
