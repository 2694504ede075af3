package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// CertsPhase is a placeholder until the phase is written.
func CertsPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "certs",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
