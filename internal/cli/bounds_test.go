package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

// TestFilesOverTheLimit: a configuration file or kubeconfig larger than
// boundedread.MaxFile is refused, naming the file and the limit, before
// kubeadm holds it: a configuration file is invalid input (exit code 3),
// a kubeconfig a plain failure (exit code 1). A file that does not say
// its size (a pipe) is read no further than the limit.
func TestFilesOverTheLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 50<<20); err != nil { // 50 MB, sparse
		t.Fatal(err)
	}
	// A pipe does not say its size: it is read up to the limit. Its writer
	// stops after 11 MiB, so that a kubeadm without a limit fails too
	// rather than reading forever.
	pipe := filepath.Join(dir, "config.pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile(pipe, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		chunk := make([]byte, 1<<20)
		for range 11 {
			if _, err := w.Write(chunk); err != nil {
				return // the reader has had enough
			}
		}
	}()
	tests := []struct {
		args     []string
		file     string
		wantCode int
	}{
		{[]string{"config", "validate", "--config", big}, big, exitcode.Validation},
		{[]string{"config", "validate", "--config", pipe}, pipe, exitcode.Validation},
		{[]string{"config", "images", "list", "--config", big}, big, exitcode.Validation},
		{[]string{"config", "migrate", "--old-config", big}, big, exitcode.Validation},
		{[]string{"token", "list", "--kubeconfig", big}, big, exitcode.Generic},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " ")+" "+filepath.Base(tt.file), func(t *testing.T) {
			_, errOut, code := run(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, errOut)
			}
			if !strings.Contains(errOut, tt.file) || !strings.Contains(errOut, boundedread.Size(boundedread.MaxFile)) {
				t.Errorf("stderr does not name %s and the limit:\n%s", tt.file, errOut)
			}
		})
	}
}
