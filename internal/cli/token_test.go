package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestTokenCommandsGiveUpOnASilentServer: against an API server that takes
// the connection and never answers, every token command fails once
// timeouts.kubernetesAPICall (of --config for create, else the default,
// shortened here) has passed for its requests, instead of waiting forever.
func TestTokenCommandsGiveUpOnASilentServer(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
timeouts:
  kubernetesAPICall: 300ms
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`), 0o600); err != nil {
		t.Fatal(err)
	}
	servers := []struct{ name, url string }{
		{"TLS server that never answers", silentHTTPS(t)},
		{"TCP server that never starts TLS", silentTCP(t)},
	}
	commands := []struct {
		name string
		args []string
		// defaultTimeout stands for timeouts.kubernetesAPICall's default:
		// with --config, the file's value must win over it.
		defaultTimeout time.Duration
	}{
		{"list", []string{"list"}, 300 * time.Millisecond},
		{"delete", []string{"delete", "abcdef"}, 300 * time.Millisecond},
		{"create", []string{"create", "abcdef.0123456789abcdef"}, 300 * time.Millisecond},
		{"create --config", []string{"create", "--config", cfg}, time.Hour},
	}
	for _, srv := range servers {
		kc := kubeconfigFor(t, srv.url)
		for _, c := range commands {
			t.Run(srv.name+"/"+c.name, func(t *testing.T) {
				o := &tokenOptions{
					apiCallTimeout: c.defaultTimeout,
					getenv:         func(string) string { return "" },
					homeDir:        func() (string, error) { return "", errors.New("no home") },
					isFile:         func(string) bool { return false },
					now:            time.Now,
					newToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
				}
				cmd := newTokenCmdWith(o)
				var out, errOut bytes.Buffer
				cmd.SetOut(&out)
				cmd.SetErr(&errOut)
				cmd.SetArgs(append(c.args, "--kubeconfig", kc))
				began := time.Now()
				err := withinDeadline(t, 30*time.Second, cmd.Execute)
				if err == nil {
					t.Fatalf("no error; stdout %q", out.String())
				}
				t.Logf("gave up after %v: %v", time.Since(began).Round(time.Millisecond), err)
			})
		}
	}
}
