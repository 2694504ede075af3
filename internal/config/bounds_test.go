package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

// TestReadFileRefusesAFileOverTheLimit: a configuration file over
// boundedread.MaxFile is invalid input (exit code 3), refused before it
// is read, with an error naming the file and the limit.
func TestReadFileRefusesAFileOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	doc := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n"
	for _, tt := range []struct {
		name string
		size int64
	}{
		{"over-limit.yaml", boundedread.MaxFile + 1},
		{"huge.yaml", 50 << 20}, // issue 29's 50 MB
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			// A valid document, made sparse up to size.
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, tt.size); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path, Strict)
			if !errors.Is(err, boundedread.ErrTooLarge) || exitcode.Of(err) != exitcode.Validation {
				t.Fatalf("error %v (exit code %d), want a validation error for the size", err, exitcode.Of(err))
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "10 MiB") {
				t.Errorf("error %q does not name the file and the limit", err)
			}
		})
	}
}
