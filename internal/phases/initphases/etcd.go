package initphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// EtcdPhase is a placeholder until the phase is written.
func EtcdPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "etcd",
		Short: "not implemented yet",
		Run:   func(context.Context, *Data) error { return errors.New("not implemented yet") },
	}
}
