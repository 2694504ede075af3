package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

// TestJoinRefusesBadInput checks the input errors join reports before it
// touches the network or the disk.
func TestJoinRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	initOnly := filepath.Join(dir, "init.yaml")
	if err := os.WriteFile(initOnly, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "abcdef.0123456789abcdef"
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"token discovery without a CA pin", []string{"join", "10.0.0.1:6443", "--token", token, "--cri-socket", "unix:///x.sock", "--node-name", "w"}, exitcode.Validation, "caCertHashes"},
		{"token discovery without an endpoint", []string{"join", "--token", token, "--discovery-token-unsafe-skip-ca-verification", "--cri-socket", "unix:///x.sock", "--node-name", "w"}, exitcode.Validation, "the API server's address as the argument"},
		{"a malformed token", []string{"join", "10.0.0.1:6443", "--token", "nope", "--discovery-token-unsafe-skip-ca-verification", "--cri-socket", "unix:///x.sock", "--node-name", "w"}, exitcode.Validation, "token"},
		{"a file without a JoinConfiguration", []string{"join", "--config", initOnly}, exitcode.Validation, "JoinConfiguration"},
		{"--config mixed with --token", []string{"join", "--config", initOnly, "--token", token}, exitcode.Generic, "can not mix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := run(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want %d with %q in:\n%s", code, tc.wantCode, tc.want, errOut)
			}
			if strings.Contains(errOut, "0123456789abcdef") {
				t.Errorf("the token secret appears in the error:\n%s", errOut)
			}
		})
	}
}
