package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/redact/redacttest"
)

// syncBuffer is a buffer klog may write to from any goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runVerbose runs the command tree with args at -v=10 and returns
// everything it wrote: standard output, standard error and klog's lines
// (which go to the process's standard error otherwise).
func runVerbose(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var logs syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&logs)
	t.Cleanup(func() {
		var v klog.Level
		_ = v.Set("0")
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	out, errOut, code := run(t, append(args, "-v=10")...)
	klog.Flush()
	return out + errOut + logs.String(), code
}

// TestInitDryRunHidesSecretsAtHighVerbosity runs "init --dry-run
// --upload-certs" at -v=10, where client-go logs every request and
// answer with its body: neither the bootstrap token secrets nor the
// kubeadm-certs Secret's data (which the printed certificate key
// decrypts) may show anywhere but where kubeadm prints them on purpose
// (see redacttest.Leaks).
func TestInitDryRunHidesSecretsAtHighVerbosity(t *testing.T) {
	const (
		token   = "x9y8z7.q1w2e3r4t5y6u7i8"
		certKey = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	)
	t.Setenv(initDryRunDirEnv, t.TempDir())
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: `+token+`
certificateKey: "`+certKey+`"
localAPIEndpoint:
  advertiseAddress: 192.0.2.10
nodeRegistration:
  name: dry-node
  criSocket: unix:///run/none.sock
skipPhases:
- preflight
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
encryptionAlgorithm: ECDSA-P256
`), 0o600); err != nil {
		t.Fatal(err)
	}
	output, code := runVerbose(t, "init", "--config", cfg, "--dry-run", "--upload-certs")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, output)
	}
	// The run must have shown what is hidden, or the test proves nothing.
	for _, want := range []string{`"Request Body"`, `"Response Body"`, `name: kubeadm-certs`, `\"name\":\"kubeadm-certs\"`, "Using certificate key:\n" + certKey, "--token " + token} {
		if !strings.Contains(output, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	for _, leak := range redacttest.Leaks(output, token, certKey) {
		t.Error(leak)
	}
}

// TestTokenCreateDryRunHidesSecretsAtHighVerbosity: "token create
// --dry-run" at -v=10 against an API server that has no token yet prints
// the token (on purpose) and nothing of its Secret's secret.
func TestTokenCreateDryRunHidesSecretsAtHighVerbosity(t *testing.T) {
	const token = "x9y8z7.q1w2e3r4t5y6u7i8"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	output, code := runVerbose(t, "token", "create", token, "--dry-run", "--kubeconfig", kubeconfigFor(t, srv.URL))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, output)
	}
	if !strings.Contains(output, `"Request Body"`) || !strings.Contains(output, "\n"+token+"\n") {
		t.Errorf("the output lacks the request bodies or the token:\n%s", output)
	}
	for _, leak := range redacttest.Leaks(output, token, "") {
		t.Error(leak)
	}
}
