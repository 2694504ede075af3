package joinphases

import (
	"context"
	"errors"

	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// onlyStackedEtcd passes a phase over unless this node joins the control
// plane with a local (stacked) etcd member.
func onlyStackedEtcd(d *Data) (bool, error) {
	if !d.IsControlPlane() {
		return false, nil
	}
	cfg, err := d.InitConfig(context.Background())
	if err != nil {
		return false, err
	}
	return cfg.Etcd.External == nil, nil
}

// CheckEtcdPhase checks, before a control-plane node adds its etcd
// member, that the etcd cluster is healthy. Hidden, as upstream's.
func CheckEtcdPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:   "check-etcd",
		Short:  "Check that the cluster's etcd is healthy",
		Hidden: true,
		RunIf:  onlyStackedEtcd,
		Run: func(ctx context.Context, d *Data) error {
			return errors.New("check-etcd: not yet implemented")
		},
	}
}

// EtcdJoinPhase adds this node's etcd member to the cluster's etcd.
func EtcdJoinPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "etcd-join",
		Short:        "Add this node's etcd member to the cluster's etcd",
		InheritFlags: withFlags("control-plane", "certificate-key", "apiserver-advertise-address", "patches"),
		RunIf:        onlyStackedEtcd,
		Run: func(ctx context.Context, d *Data) error {
			return errors.New("etcd-join: not yet implemented")
		},
	}
}
