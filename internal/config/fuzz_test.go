package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
)

// FuzzLoad feeds arbitrary bytes through decoding, defaulting and
// validation of every kind. Errors are fine; panics are not.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/config/*.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"))
	env := configtest.Environment("192.0.2.1")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []config.Strictness{config.Strict, config.Lenient} {
			docs, err := config.Decode(data, strict)
			if err != nil {
				continue
			}
			if init, err := env.InitConfiguration(context.Background(), docs, config.DefaultOptions{}); err == nil {
				validation.ValidateInitConfiguration(init)
				if _, err := config.MarshalInit(init); err != nil {
					t.Fatalf("a decoded configuration must marshal: %v", err)
				}
			}
			if join, err := env.JoinConfiguration(docs, config.DefaultOptions{}); err == nil {
				validation.ValidateJoinConfiguration(join)
			}
			if reset, err := env.ResetConfiguration(docs, config.DefaultOptions{}); err == nil {
				validation.ValidateResetConfiguration(reset)
			}
			validation.ValidateUpgradeConfiguration(env.UpgradeConfiguration(docs))
		}
	})
}
