package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// unreachableKubeconfig is a valid kubeconfig for a server nobody answers
// on: commands get as far as their first API call.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.conf")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
users:
- name: u
  user: {token: not-a-real-credential}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTokenCommandErrors(t *testing.T) {
	kc := unreachableKubeconfig(t)
	cfg := filepath.Join(t.TempDir(), "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no sub-command", []string{"token"}, "subcommand is required"},
		{"--config with token flags", []string{"token", "create", "--config", cfg, "--ttl", "1h", "--certificate-key", "x"}, "can not mix '--config' with arguments [certificate-key ttl]"},
		{"malformed token", []string{"token", "create", "abcdef.0123456789abcdeX"}, `"abcdef.<redacted>" is not of the form`},
		{"bad usage", []string{"token", "create", "--usages", "foo"}, "invalid bootstrap token usage string: foo"},
		{"bad group", []string{"token", "create", "--groups", "bad"}, `bootstrap group "bad" is invalid`},
		{"missing kubeconfig", []string{"token", "list", "--kubeconfig", filepath.Join(t.TempDir(), "absent.conf")}, "absent.conf"},
		{"unknown output format", []string{"token", "list", "-o", "xml"}, `unknown output format "xml"; use text or one of json|yaml`},
		{"delete without tokens", []string{"token", "delete"}, "missing argument"},
		{"delete a malformed token", []string{"token", "delete", "abcdef.0123456789abcdeX"}, `"abcdef.<redacted>" is neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--kubeconfig") {
				args = append(args, "--kubeconfig", kc)
			}
			out, errOut, code := run(t, args...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("code %d, stderr %q; want code 1 and %q", code, errOut, tt.want)
			}
			if strings.Contains(out+errOut, "0123456789abcdeX") {
				t.Errorf("a token secret was printed: %q %q", out, errOut)
			}
		})
	}
}

func TestTokenKubeconfigLookup(t *testing.T) {
	existing := map[string]bool{"/b.conf": true, "/home/me/.kube/config": true}
	o := &tokenOptions{
		kubeconfig: defaultAdminKubeconfig,
		homeDir:    func() (string, error) { return "/home/me", nil },
		isFile:     func(p string) bool { return existing[p] },
	}
	tests := []struct {
		name, env, flag, want string
		noHome                bool
	}{
		{name: "flag wins", env: "/b.conf", flag: "/x.conf", want: "/x.conf"},
		{name: "first existing file of KUBECONFIG", env: "/a.conf:/b.conf", want: "/b.conf"},
		{name: "then ~/.kube/config", env: "/a.conf", want: "/home/me/.kube/config"},
		{name: "then the default", env: "", noHome: true, want: defaultAdminKubeconfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o.getenv = func(string) string { return tt.env }
			if tt.noHome {
				o.homeDir = func() (string, error) { return "", errors.New("no home") }
			}
			cmd := &cobra.Command{}
			cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", defaultAdminKubeconfig, "")
			if tt.flag != "" {
				if err := cmd.Flags().Set("kubeconfig", tt.flag); err != nil {
					t.Fatal(err)
				}
			}
			if got := o.kubeconfigPath(cmd); got != tt.want {
				t.Errorf("kubeconfig %s, want %s", got, tt.want)
			}
		})
	}
}
