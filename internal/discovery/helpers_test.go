package discovery

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
)

// Test-only tokens. The secrets hold letters past "f", so they cannot show
// up inside a hex hash by chance.
const (
	tokenID      = "abc123"
	tokenSecret  = "s3cr3tvalu3xyzwq"
	token        = tokenID + "." + tokenSecret
	wrongSecret  = "wr0ngs3cr3tqwxyz"
	otherID      = "zzz999"
	otherSecret  = "0th3rs3cr3tkmnop"
	tlsToken     = "tls456." + tlsSecret
	tlsSecret    = "tl5s3cr3tghijklm"
	fileSecret   = "f1l3s3cr3tuvwxyz"
	fileToken    = "fil789." + fileSecret
	clusterInfoP = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
	// apiHost is the name the tests give the fake API server; it is one of
	// the names in httptest's certificate, and the test dialer sends every
	// connection to the fake server whatever the address.
	apiHost = "example.com"
)

var secrets = []string{tokenSecret, wrongSecret, otherSecret, tlsSecret, fileSecret}

// noSecret fails the test when s contains a token secret.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range secrets {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows a token secret: %s", what, s)
		}
	}
}

// fakeClock never waits: After moves the time on and fires at once.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// seenRequest is what the fake API server recorded of a request.
type seenRequest struct {
	method, path, auth, accept string
}

// fakeAPI is a TLS server answering GETs of cluster-info with what respond
// returns for the n-th request (from 1): an HTTP status and a ConfigMap
// or metav1.Status. Other paths are served from files.
type fakeAPI struct {
	srv     *httptest.Server
	caPEM   []byte // the server's self-signed certificate, as a CA
	respond func(n int) (int, any)
	files   map[string][]byte
	// handlers answer their paths in place of respond and files.
	handlers map[string]http.HandlerFunc

	mu     sync.Mutex
	seen   []seenRequest
	dialed []string
}

func newFakeAPI(t *testing.T, respond func(n int) (int, any)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{respond: respond, files: map[string][]byte{}, handlers: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Accept")})
	n := 0
	for _, s := range f.seen {
		if s.path == clusterInfoP {
			n++
		}
	}
	h := f.handlers[r.URL.Path]
	f.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	if data, ok := f.files[r.URL.Path]; ok {
		_, _ = w.Write(data)
		return
	}
	if r.URL.Path != clusterInfoP || r.Method != http.MethodGet {
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	code, body := f.respond(n)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// requests returns the requests seen so far.
func (f *fakeAPI) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// clusterInfoReads counts the reads of cluster-info.
func (f *fakeAPI) clusterInfoReads() int {
	n := 0
	for _, r := range f.requests() {
		if r.path == clusterInfoP {
			n++
		}
	}
	return n
}

// discoverer dials the fake server for every address and records the
// addresses asked for; its log lines go to the test log after a check for
// secrets.
func (f *fakeAPI) discoverer(t *testing.T, clock Clock) *Discoverer {
	return &Discoverer{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.mu.Lock()
			f.dialed = append(f.dialed, addr)
			f.mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, f.srv.Listener.Addr().String())
		},
		Clock: clock,
		Logf: func(format string, args ...any) {
			t.Helper()
			line := fmt.Sprintf(format, args...)
			noSecret(t, "a log line", line)
			t.Log(line)
		},
	}
}

// endpoint is the host:port token discovery is given.
func (f *fakeAPI) endpoint() string {
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	return net.JoinHostPort(apiHost, port)
}

// pin is the CA pin of the fake server's certificate.
func (f *fakeAPI) pin() string { return bootstraptoken.CACertHash(f.srv.Certificate()) }

// clusterInfoKubeconfig is the kubeconfig kubeadm init puts in
// cluster-info: one unnamed cluster.
func clusterInfoKubeconfig(t *testing.T, server string, caPEM []byte) string {
	t.Helper()
	data, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"": {Server: server, CertificateAuthorityData: caPEM}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// clusterInfo returns the ConfigMap with kubeconfig, signed as the
// bootstrap signer signs it for each token ID in signers (ID → secret).
func clusterInfo(t *testing.T, kubeconfig string, signers map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: kubeconfig},
	}
	for id, secret := range signers {
		sig, err := jws.ComputeDetachedSignature(kubeconfig, id, secret)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
	}
	return cm
}

// status is an API error answer.
func status(code int, reason metav1.StatusReason) (int, any) {
	return code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason,
		Message: "cluster-info: " + string(reason),
	}
}

// otherCA returns a self-signed CA certificate, in PEM, unrelated to the
// fake server's, and its pin.
func otherCA(t *testing.T) ([]byte, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), bootstraptoken.CACertHash(cert)
}
