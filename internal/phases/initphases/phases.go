package initphases

import (
	"context"
	"fmt"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Phases returns the init workflow, in the order upstream kubeadm runs it.
// The phases that need a running API server are not built yet: they are
// listed (hidden) so their names work in --skip-phases and skipPhases as
// upstream's do, and running one fails with a clear message.
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

// pending is a phase of upstream's workflow that this build does not have
// yet. A group of pending phases fails in its first child.
func pending(name string, children ...workflow.Phase[*Data]) workflow.Phase[*Data] {
	p := workflow.Phase[*Data]{
		Name:   name,
		Short:  "not available in this build yet",
		Hidden: true,
		Phases: children,
	}
	if len(children) == 0 {
		p.Run = func(context.Context, *Data) error {
			return fmt.Errorf("this build of kubeadm does not have the %q phase yet (it needs the API server); the files of the earlier phases are in place", name)
		}
	}
	return p
}
