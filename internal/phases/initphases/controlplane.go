package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// ControlPlanePhase is a placeholder until the phase is written.
func ControlPlanePhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "control-plane",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
