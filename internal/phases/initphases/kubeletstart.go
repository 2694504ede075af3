package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// KubeletStartPhase is a placeholder until the phase is written.
func KubeletStartPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubelet-start",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
