package config

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
)

// Validated holds each kubeadm document of a file, defaulted; a kind the
// file did not hold is nil (Init is set when the file held an
// InitConfiguration or a ClusterConfiguration).
type Validated struct {
	Init    *kubeadm.InitConfiguration
	Join    *kubeadm.JoinConfiguration
	Reset   *kubeadm.ResetConfiguration
	Upgrade *kubeadm.UpgradeConfiguration
}

// ValidateDocuments defaults every kubeadm document of docs and validates
// it, as `kubeadm config validate` does. The error is a defaulting failure;
// the list holds what does not validate, by field path.
func (e Environment) ValidateDocuments(ctx context.Context, docs *Documents) (*Validated, field.ErrorList, error) {
	var out Validated
	var errs field.ErrorList
	opts := DefaultOptions{}
	if docs.Init != nil || docs.Cluster != nil {
		cfg, err := e.InitConfiguration(ctx, docs, opts)
		if err != nil {
			return nil, nil, err
		}
		errs = append(errs, validation.ValidateInitConfiguration(cfg)...)
		for _, w := range validation.ClusterConfigurationWarnings(&cfg.ClusterConfiguration) {
			e.Warn("%s", w)
		}
		out.Init = cfg
	}
	if docs.Join != nil {
		cfg, err := e.JoinConfiguration(docs, opts)
		if err != nil {
			return nil, nil, err
		}
		errs = append(errs, validation.ValidateJoinConfiguration(cfg)...)
		out.Join = cfg
	}
	if docs.Reset != nil {
		cfg, err := e.ResetConfiguration(docs, opts)
		if err != nil {
			return nil, nil, err
		}
		errs = append(errs, validation.ValidateResetConfiguration(cfg)...)
		out.Reset = cfg
	}
	if docs.Upgrade != nil {
		cfg := e.UpgradeConfiguration(docs)
		errs = append(errs, validation.ValidateUpgradeConfiguration(cfg)...)
		out.Upgrade = cfg
	}
	return &out, errs, nil
}
