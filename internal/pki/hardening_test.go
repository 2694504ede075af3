package pki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// TestCertModeUnderHardening: with the CISHardening gate every
// certificate is written with mode 0600, created or renewed, and
// RestrictModes brings kept ones there; without it they stay 0644.
func TestCertModeUnderHardening(t *testing.T) {
	modes := func(dir string) map[string]os.FileMode {
		out := map[string]os.FileMode{}
		_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				fi, _ := e.Info()
				rel, _ := filepath.Rel(dir, p)
				out[rel] = fi.Mode().Perm()
			}
			return nil
		})
		return out
	}
	plain := mustTree(t, testConfig())
	for f, m := range modes(plain) {
		if strings.HasSuffix(f, ".crt") && m != 0o644 {
			t.Errorf("without the gate %s has mode %v", f, m)
		}
	}
	cfg := testConfig(func(c *kubeadm.InitConfiguration) { c.FeatureGates = map[string]bool{"CISHardening": true} })
	hard := mustTree(t, cfg)
	for f, m := range modes(hard) {
		if m != 0o600 {
			t.Errorf("with the gate %s has mode %v", f, m)
		}
	}
	if _, err := RenewCert(&cfg.ClusterConfiguration, hard, mustLookup("apiserver"), testOptions(t)); err != nil {
		t.Fatal(err)
	}
	if m := modes(hard)["apiserver.crt"]; m != 0o600 {
		t.Errorf("renewed with the gate: mode %v", m)
	}
	// A certificate kept from a run without the gate.
	for _, c := range CertTable() {
		if err := RestrictModes(plain, c, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for f, m := range modes(plain) {
		if f != "sa.key" && f != "sa.pub" && m != 0o600 {
			t.Errorf("after RestrictModes %s has mode %v", f, m)
		}
	}
}
