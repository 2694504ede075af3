package redact

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/klog/v2"
)

const (
	certKey = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	digest  = "sha256:26488e9fc7c5cb5fdda9996cda2e6651a9af5febce07ea02de11bd3ef3f49e9c"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Using token: abcdef.0123456789abcdef now", "Using token: abcdef.<redacted> now"},
		{"kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef", "kubeadm join 10.0.0.1:6443 --token abcdef.<redacted>"},
		{"token: abcdef.0123456789abcdef", "token: abcdef.<redacted>"},
		{"token: <redacted>", "token: <redacted>"},
		{`{"token":"s3cr3t-value"}`, `{"token":"<redacted>"}`},
		{"  client-key-data: LS0tLS1CRUdJTg==", "  client-key-data: <redacted>"},
		{"password: hunter2", "password: <redacted>"},
		{"Authorization: Bearer abc.def.ghi", "Authorization: Bearer <masked>"},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <masked>"},
		{`-H "Authorization: Bearer <masked>"`, `-H "Authorization: Bearer <masked>"`},
		{"sent with bearer abcdefabcdef", "sent with bearer <masked>"},
		{"--certificate-key " + certKey, "--certificate-key <redacted>"},
		{"hash " + digest, "hash " + digest},
		{"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\nrest", "<private key redacted>\nrest"},
		{"cut: -----BEGIN RSA PRIVATE KEY-----\nMIIEow", "cut: <private key redacted>"},
		{"token-id: abcdef, expiration soon", "token-id: abcdef, expiration soon"},
		{"nothing secret in kubernetes.io/hostname", "nothing secret in kubernetes.io/hostname"},
		{"abcdef.<redacted> and Bearer <masked>", "abcdef.<redacted> and Bearer <masked>"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
		if got := String(String(tt.in)); got != tt.want {
			t.Errorf("String twice (%q) = %q", tt.in, got)
		}
	}
}

func TestBody(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"kubeadm-certs","namespace":"kube-system"},"data":{"ca.key":"` + b64("sealed") + `"},"stringData":{"x":"y"},"type":"Opaque"}`
	// afterValue is where the value of ca.key ends in secret.
	afterValue := strings.Index(secret, `"ca.key":"`) + len(`"ca.key":"`+b64("sealed")+`"`)
	for _, tt := range []struct {
		name, in, want string
	}{
		{"Secret", secret,
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"kubeadm-certs","namespace":"kube-system"},"data":{"ca.key":"<redacted>"},"stringData":{"x":"<redacted>"},"type":"Opaque"}`},
		{"Secret with a newline, as a request body", secret + "\n",
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"kubeadm-certs","namespace":"kube-system"},"data":{"ca.key":"<redacted>"},"stringData":{"x":"<redacted>"},"type":"Opaque"}`},
		{"ConfigMap kept", `{"kind":"ConfigMap","apiVersion":"v1","data":{"a":"b <x> & y"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","data":{"a":"b <x> & y"}}`},
		{"ConfigMap with a token inside", `{"kind":"ConfigMap","data":{"kubeconfig":"users:\n- user:\n    token: abcdef.0123456789abcdef\n"}}`,
			`{"kind":"ConfigMap","data":{"kubeconfig":"users:\n- user:\n    token: abcdef.<redacted>\n"}}`},
		{"SecretList", `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"token-secret":"` + b64("0123456789abcdef") + `"}},{"metadata":{"name":"b"},"data":{"k":"dg=="}}]}`,
			`{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"token-secret":"<redacted>"}},{"metadata":{"name":"b"},"data":{"k":"<redacted>"}}]}`},
		{"ConfigMapList kept", `{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"},"data":{"k":"v"}}]}`,
			`{"kind":"ConfigMapList","items":[{"metadata":{"name":"a"},"data":{"k":"v"}}]}`},
		{"List of mixed kinds", `{"kind":"List","items":[{"kind":"ConfigMap","data":{"k":"v"}},{"kind":"Secret","data":{"k":"dg=="}},{"data":{"k":"dg=="}}]}`,
			`{"kind":"List","items":[{"kind":"ConfigMap","data":{"k":"v"}},{"kind":"Secret","data":{"k":"<redacted>"}},{"data":{"k":"<redacted>"}}]}`},
		{"watch event", `{"type":"ADDED","object":{"kind":"Secret","data":{"k":"dg=="}}}`,
			`{"type":"ADDED","object":{"kind":"Secret","data":{"k":"<redacted>"}}}`},
		{"patch, which names no kind", `{"data":{"token-secret":"dg=="},"metadata":{"labels":{"a":"b"}}}`,
			`{"data":{"token-secret":"<redacted>"},"metadata":{"labels":{"a":"b"}}}`},
		{"data that is not an object", `{"kind":"Secret","data":"dg==","n":[1,true,null,2.5]}`,
			`{"kind":"Secret","data":"<redacted>","n":[1,true,null,2.5]}`},
		{"cut short by client-go", secret[:afterValue] + " [truncated 99 chars]",
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"kubeadm-certs","namespace":"kube-system"},"data":{"ca.key":"<redacted>" [truncated 99 chars]`},
		{"cut inside a secret value", secret[:afterValue-3] + " [truncated 104 chars]",
			`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"kubeadm-certs","namespace":"kube-system"},"data":{"ca.key": [truncated 104 chars]`},
		{"no valid JSON from some point on", `{"kind":"Secret","data":{"k":"dg=="}} {"data": nope "xyz"}`,
			`{"kind":"Secret","data":{"k":"<redacted>"}} {"data": [the rest is no valid JSON and is left out]`},
		{"hex dump", "00000000  6b 38 73 00 0a 0d 0a 02  76 31 12 06 53 65 63 72  |k8s.....v1..Secr|\n",
			"[79 characters of hex dump left out: a binary body may hold secrets]"},
		{"hex dump cut short", "00000000  6b 38 73 00 [truncated 500 chars]", "[21 characters of hex dump left out: a binary body may hold secrets] [truncated 500 chars]"},
		{"plain text", "404 page not found, token: abc", "404 page not found, token: <redacted>"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Body(tt.in); got != tt.want {
				t.Errorf("Body(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestFilter(t *testing.T) {
	f := Filter{}
	args := []any{"token abcdef.0123456789abcdef", 42, stringer{"key " + certKey}, errors.New("bearer xyz"), nil}
	got := f.Filter(args)
	want := []any{"token abcdef.<redacted>", 42, "key <redacted>", "bearer <masked>", nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Filter = %v, want %v", got, want)
	}
	if args[0] != "token abcdef.0123456789abcdef" {
		t.Error("Filter changed its argument")
	}
	if clean := []any{"nothing", 1}; &f.Filter(clean)[0] != &clean[0] {
		t.Error("Filter copied arguments that hold no secret")
	}

	format, fargs := f.FilterF("joining with %s.%s", []any{"abcdef", "0123456789abcdef"})
	if msg := fmt.Sprintf(format, fargs...); msg != "joining with abcdef.<redacted>" {
		t.Errorf("FilterF = %q", msg)
	}
	if format, fargs := f.FilterF("%d nodes", []any{3}); format != "%d nodes" || len(fargs) != 1 {
		t.Errorf("FilterF changed a message without secrets: %q %v", format, fargs)
	}

	msg, kvs := f.FilterS("Request Body for abcdef.0123456789abcdef", []any{
		"body", `{"kind":"Secret","data":{"k":"dg=="}}`,
		"url", "https://10.0.0.1:6443/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef",
		"count", 3,
	})
	if msg != "Request Body for abcdef.<redacted>" {
		t.Errorf("FilterS message = %q", msg)
	}
	if kvs[1] != `{"kind":"Secret","data":{"k":"<redacted>"}}` || kvs[3] != "https://10.0.0.1:6443/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef" || kvs[5] != 3 {
		t.Errorf("FilterS values = %v", kvs)
	}
}

func TestSecret(t *testing.T) {
	token := &corev1.Secret{
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:           []byte("abcdef"),
			bootstrapapi.BootstrapTokenSecretKey:       []byte("0123456789abcdef"),
			bootstrapapi.BootstrapTokenUsageSigningKey: []byte("true"),
		},
		StringData: map[string]string{bootstrapapi.BootstrapTokenSecretKey: "0123456789abcdef"},
	}
	Secret(token)
	if string(token.Data["token-id"]) != "abcdef" || string(token.Data["usage-bootstrap-signing"]) != "true" {
		t.Errorf("public entries of a token hidden: %q", token.Data)
	}
	if string(token.Data["token-secret"]) != Redacted || token.StringData["token-secret"] != Redacted {
		t.Errorf("token secret shown: %q %q", token.Data, token.StringData)
	}
	// The same entries in a Secret of another type are not known public.
	other := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"token-id": []byte("abcdef"), "ca.key": []byte("sealed")}}
	Secret(other)
	for k, v := range other.Data {
		if string(v) != Redacted {
			t.Errorf("%s shown: %q", k, v)
		}
	}
}

// logs captures klog's output while f runs at verbosity v; f gets the
// output too, for loggers of its own.
func logs(t *testing.T, v string, f func(out *syncBuffer)) string {
	t.Helper()
	var buf syncBuffer
	var level klog.Level
	if err := level.Set(v); err != nil {
		t.Fatal(err)
	}
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	defer func() {
		_ = level.Set("0")
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()
	f(&buf)
	klog.Flush()
	return buf.String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestClientGoLogsHideSecrets reads and writes Secrets through client-go
// at -v=8, -v=9 and -v=10, where it logs request and answer bodies (cut
// short at 1024 and 10240 characters below -v=10) and, at -v=9, the
// request as a curl command: once InstallKlogFilter ran, no secret shows,
// also when a logger of another library is kept in the request's context.
func TestClientGoLogsHideSecrets(t *testing.T) {
	InstallKlogFilter()
	const tokenSecret = "0123456789abcdef"
	sealed := strings.Repeat("c2VhbGVk", 2000) // makes the body longer than what -v=9 shows
	answer := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system"},"data":{"token-secret":"` +
		base64.StdEncoding.EncodeToString([]byte(tokenSecret)) + `","blob":"` + sealed + `"},"type":"bootstrap.kubernetes.io/token"}`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
	}))
	defer srv.Close()
	for _, v := range []string{"8", "9", "10"} {
		t.Run("-v="+v, func(t *testing.T) {
			out := logs(t, v, func(out *syncBuffer) {
				c, err := kubernetes.NewForConfig(&rest.Config{
					Host: srv.URL, BearerToken: "abcdef." + tokenSecret,
					TLSClientConfig: rest.TLSClientConfig{Insecure: true},
				})
				if err != nil {
					t.Fatal(err)
				}
				// A logger of another library, kept in the context,
				// that client-go would use if it could.
				ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) {
					fmt.Fprintln(out, prefix, args)
				}, funcr.Options{Verbosity: 10}))
				s := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-certs", Namespace: "kube-system"},
					Data:       map[string][]byte{"ca.key": []byte("sealed CA key")},
					StringData: map[string]string{"certificate-key": certKey},
				}
				if _, err := c.CoreV1().Secrets("kube-system").Create(ctx, s, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := c.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			if !strings.Contains(out, "Response Body") {
				t.Fatalf("client-go logged no body at -v=%s:\n%s", v, out)
			}
			for _, secret := range []string{
				tokenSecret, base64.StdEncoding.EncodeToString([]byte(tokenSecret)), sealed[:64], certKey,
				base64.StdEncoding.EncodeToString([]byte("sealed CA key")), hex.EncodeToString([]byte("sealed CA key")),
			} {
				if strings.Contains(out, secret) {
					t.Errorf("-v=%s: %q shows in the logs:\n%s", v, secret, out)
				}
			}
		})
	}
}
