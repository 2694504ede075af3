package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// KubeconfigPhase is a placeholder until the phase is written.
func KubeconfigPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubeconfig",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
