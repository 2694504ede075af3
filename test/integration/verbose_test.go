package integration

import (
	"os"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/redact/redacttest"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// TestVerboseLogsHideSecrets runs, against a real API server and at
// -v=10 (where client-go logs every request and answer with its body),
// the commands that write or read Secrets: uploading the control-plane
// certificates, creating, listing and deleting bootstrap tokens, and a
// control-plane join's dry run, which downloads kubeadm-certs with the
// bootstrap token. Nothing they write may hold a bootstrap token secret,
// the certificate key or kubeadm-certs data that the key decrypts, but
// where kubeadm prints them on purpose (see redacttest.Leaks; "token
// list" prints every token on standard output, on purpose: only its
// standard error is looked at).
func TestVerboseLogsHideSecrets(t *testing.T) {
	const (
		token   = "vrbose.q1w2e3r4t5y6u7i8"
		certKey = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	)
	cp := controlplane.Start(t, controlplane.Options{})
	cfg := "/verbose.yaml"
	if err := os.WriteFile(cp.HostPath(cfg), []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: `+token+`
certificateKey: "`+certKey+`"
localAPIEndpoint:
  advertiseAddress: `+cp.AdvertiseAddress().String()+`
nodeRegistration:
  name: `+controlplane.DefaultNodeName+`
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: `+controlplane.KubernetesVersion+`
controlPlaneEndpoint: `+cp.AdvertiseAddress().String()+`:6443
`), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=/etc/kubernetes/admin.conf"
	for _, c := range []struct {
		name       string
		args       []string
		stderrOnly bool
		// logged is a body the command must have logged, or the test
		// proves nothing.
		logged string
	}{
		{"upload-certs", []string{"init", "phase", "upload-certs", "--upload-certs", "--config", cfg}, false, `\"name\":\"kubeadm-certs\"`},
		{"upload-config", []string{"init", "phase", "upload-config", "all", "--config", cfg}, false, `\"name\":\"kubeadm-config\"`},
		{"bootstrap-token", []string{"init", "phase", "bootstrap-token", "--config", cfg}, false, `\"name\":\"bootstrap-token-vrbose\"`},
		{"token create", []string{"token", "create", "vrbos2.q1w2e3r4t5y6u7i8", kc}, false, `\"name\":\"bootstrap-token-vrbos2\"`},
		{"token create --dry-run", []string{"token", "create", "vrbos3.q1w2e3r4t5y6u7i8", "--dry-run", kc}, false, `\"name\":\"bootstrap-token-vrbos3\"`},
		{"token list", []string{"token", "list", kc}, true, `\"kind\":\"SecretList\"`},
		{"token list -o yaml", []string{"token", "list", "-o", "yaml", kc}, true, `\"kind\":\"SecretList\"`},
		{"join --control-plane --dry-run", []string{"join", cp.AdvertiseAddress().String() + ":6443", "--token", token,
			"--discovery-token-unsafe-skip-ca-verification", "--control-plane", "--certificate-key", certKey,
			"--dry-run", "--ignore-preflight-errors=all", "--node-name", "verbose-joiner",
			// No kubelet registers the Node that phase would wait for.
			"--skip-phases", "control-plane-join/mark-control-plane",
			"--apiserver-advertise-address", cp.AdvertiseAddress().String()}, false, `\"name\":\"kubeadm-certs\"`},
		{"token delete", []string{"token", "delete", "vrbos2", kc}, false, `"Response Body"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := cp.KubeadmCommand(append(c.args, "-v=10")...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubeadm %s: %v\n%s\n%s", strings.Join(c.args, " "), err, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), c.logged) {
				t.Errorf("%s was not logged:\n%s", c.logged, stderr.String())
			}
			output := stdout.String() + "\n" + stderr.String()
			if c.stderrOnly {
				output = stderr.String()
			}
			// The join command's own token is printed on purpose in
			// its flags' echo, the other tokens nowhere.
			want := token
			if strings.HasPrefix(c.name, "token create") {
				want = c.args[2]
			}
			for _, leak := range redacttest.Leaks(output, want, certKey) {
				t.Error(leak)
			}
		})
	}
}
