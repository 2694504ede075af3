package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// PreflightPhase is a placeholder until the phase is written.
func PreflightPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "preflight",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
