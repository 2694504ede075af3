package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/phases/joinphases"
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

// TestPrintJoined: the closing lines of a join are upstream kubeadm's,
// byte for byte: scripts grep them.
func TestPrintJoined(t *testing.T) {
	worker := "\nThis node has joined the cluster:\n" +
		"* Certificate signing request was sent to apiserver and a response was received.\n" +
		"* The Kubelet was informed of the new secure connection details.\n\n" +
		"Run 'kubectl get nodes' on the control-plane to see this node join the cluster.\n\n"
	controlPlane := "\nThis node has joined the cluster and a new control plane instance was created:\n\n" +
		"* Certificate signing request was sent to apiserver and approval was received.\n" +
		"* The Kubelet was informed of the new secure connection details.\n" +
		"* Control plane label and taint were applied to the new node.\n" +
		"* The Kubernetes control plane instances scaled up.\n" +
		"* A new etcd member was added to the local/stacked etcd cluster.\n\n" +
		"To start administering your cluster from this node, you need to run the following as a regular user:\n\n" +
		"\tmkdir -p $HOME/.kube\n" +
		"\tsudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config\n" +
		"\tsudo chown $(id -u):$(id -g) $HOME/.kube/config\n\n" +
		"Run 'kubectl get nodes' to see this node join the cluster.\n\n"
	for _, tc := range []struct {
		name string
		cfg  *kubeadm.JoinConfiguration
		want string
	}{
		{"worker", &kubeadm.JoinConfiguration{}, worker},
		{"control plane", &kubeadm.JoinConfiguration{ControlPlane: &kubeadm.JoinControlPlane{}}, controlPlane},
	} {
		var out bytes.Buffer
		printJoined(&out, &joinphases.Data{Cfg: tc.cfg})
		if out.String() != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.name, out.String(), tc.want)
		}
	}
}
