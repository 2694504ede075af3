package apilb

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// pki is a CA and a serving certificate for the name "kubernetes", as an
// API server's.
type pki struct {
	pool   *x509.CertPool
	server tls.Certificate
}

func newPKI(t testing.TB) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"kubernetes"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pki{pool: pool, server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

func (p pki) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool, ServerName: ServerName, MinVersion: tls.VersionTLS12}
}

// fakeAPIServer is a real TLS server on a real TCP port: /readyz answers
// 200 while ready is set, 500 otherwise; /who answers its name.
type fakeAPIServer struct {
	name  string
	addr  string
	ready atomic.Bool
	srv   *http.Server
	ln    net.Listener
}

func startAPIServer(t testing.TB, p pki, name string) *fakeAPIServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeAPIServer{name: name, addr: ln.Addr().String(), ln: ln}
	s.ready.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "[-]etcd failed", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/who", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })
	s.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{p.server}}, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(s.stop)
	return s
}

// stop closes the server and every connection it has, as a killed
// kube-apiserver's do.
func (s *fakeAPIServer) stop() { _ = s.srv.Close() }

// startBalancer serves b on a real loopback port until the test ends.
func startBalancer(t testing.TB, b *Balancer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// who asks addr's /who on a new connection, as a client of the balancer
// does: TLS with the server name "kubernetes".
func who(p pki, addr string) (string, error) {
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: p.clientTLS(), DisableKeepAlives: true}}
	resp, err := hc.Get("https://" + addr + "/who")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func healthy(b *Balancer, addr string) (ok, probed bool) {
	for _, s := range b.Status() {
		if s.Addr == addr {
			return s.Healthy, s.Probed
		}
	}
	return false, false
}

func TestFailoverWithinASecond(t *testing.T) {
	p := newPKI(t)
	a, bb, c := startAPIServer(t, p, "a"), startAPIServer(t, p, "b"), startAPIServer(t, p, "c")
	lb := New(Config{Probe: ReadyzProber(p.clientTLS(), nil)})
	lb.SetUpstreams([]string{a.addr, bb.addr, c.addr})
	lbAddr := startBalancer(t, lb)
	waitFor(t, "all healthy", 2*time.Second, func() bool {
		for _, s := range lb.Status() {
			if !s.Healthy {
				return false
			}
		}
		return true
	})

	tests := []struct {
		name  string
		fail  func()
		addr  string
		other []string
	}{
		{name: "readyz fails", fail: func() { a.ready.Store(false) }, addr: a.addr, other: []string{"b", "c"}},
		{name: "process gone", fail: bb.stop, addr: bb.addr, other: []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fail()
			took := waitFor(t, tt.addr+" marked down", 1500*time.Millisecond, func() bool {
				ok, _ := healthy(lb, tt.addr)
				return !ok
			})
			t.Logf("%s marked down after %v", tt.addr, took)
			for range 6 {
				got, err := who(p, lbAddr)
				if err != nil {
					t.Fatalf("request through the balancer: %v", err)
				}
				if !slices.Contains(tt.other, got) {
					t.Fatalf("request went to %q, want one of %v", got, tt.other)
				}
			}
		})
	}

	// Back: a is ready again and takes connections again.
	a.ready.Store(true)
	waitFor(t, "a healthy again", 1500*time.Millisecond, func() bool { ok, _ := healthy(lb, a.addr); return ok })
	seen := map[string]bool{}
	for range 6 {
		got, err := who(p, lbAddr)
		if err != nil {
			t.Fatal(err)
		}
		seen[got] = true
	}
	if !seen["a"] || !seen["c"] {
		t.Errorf("after recovery requests went to %v, want a and c", seen)
	}
}

func TestSpreadsOverHealthyUpstreams(t *testing.T) {
	p := newPKI(t)
	srv := []*fakeAPIServer{startAPIServer(t, p, "a"), startAPIServer(t, p, "b"), startAPIServer(t, p, "c")}
	lb := New(Config{Probe: ReadyzProber(p.clientTLS(), nil)})
	lb.SetUpstreams([]string{srv[0].addr, srv[1].addr, srv[2].addr})
	lbAddr := startBalancer(t, lb)
	count := map[string]int{}
	for range 30 {
		got, err := who(p, lbAddr)
		if err != nil {
			t.Fatal(err)
		}
		count[got]++
	}
	for _, s := range srv {
		if count[s.name] < 5 {
			t.Errorf("upstream %s got %d of 30 connections (%v); want them spread", s.name, count[s.name], count)
		}
		if want := fmt.Sprintf(" %s=up/%d", s.addr, count[s.name]); !strings.Contains(lb.Report(), want) {
			t.Errorf("Report() = %q, want it to contain %q", lb.Report(), want)
		}
	}
}

func TestPrefersLocalUpstream(t *testing.T) {
	p := newPKI(t)
	local, remote := startAPIServer(t, p, "local"), startAPIServer(t, p, "remote")
	lb := New(Config{Preferred: local.addr, Probe: ReadyzProber(p.clientTLS(), nil)})
	lb.SetUpstreams([]string{remote.addr}) // the preferred one is added by itself
	lbAddr := startBalancer(t, lb)
	waitFor(t, "local healthy", 2*time.Second, func() bool { ok, _ := healthy(lb, local.addr); return ok })
	for range 10 {
		if got, err := who(p, lbAddr); err != nil || got != "local" {
			t.Fatalf("got %q, %v; want every connection on the local API server", got, err)
		}
	}
	local.ready.Store(false)
	waitFor(t, "local down", 1500*time.Millisecond, func() bool { ok, _ := healthy(lb, local.addr); return !ok })
	if got, err := who(p, lbAddr); err != nil || got != "remote" {
		t.Fatalf("got %q, %v; want the remote API server while the local one is down", got, err)
	}
	local.ready.Store(true)
	waitFor(t, "local healthy again", 1500*time.Millisecond, func() bool { ok, _ := healthy(lb, local.addr); return ok })
	if got, err := who(p, lbAddr); err != nil || got != "local" {
		t.Fatalf("got %q, %v; want the local API server back", got, err)
	}
}

// A connection forwarded to an upstream that goes down is closed, so a
// client with a long watch open reconnects at once.
func TestClosesConnectionsOfADownUpstream(t *testing.T) {
	p := newPKI(t)
	a, b2 := startAPIServer(t, p, "a"), startAPIServer(t, p, "b")
	lb := New(Config{Preferred: a.addr, Probe: ReadyzProber(p.clientTLS(), nil)})
	lb.SetUpstreams([]string{b2.addr})
	lbAddr := startBalancer(t, lb)
	waitFor(t, "a healthy", 2*time.Second, func() bool { ok, _ := healthy(lb, a.addr); return ok })

	conn, err := tls.Dial("tcp", lbAddr, p.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Handshake(); err != nil {
		t.Fatal(err)
	}
	a.ready.Store(false) // the server process lives on; only /readyz fails
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	if err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("read on a connection to a down upstream: %v; want it closed", err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("connection closed after %v; want about a second at most", took)
	}
}

func TestSetUpstreams(t *testing.T) {
	p := newPKI(t)
	a, b2 := startAPIServer(t, p, "a"), startAPIServer(t, p, "b")
	var changes atomic.Int32
	lb := New(Config{Probe: ReadyzProber(p.clientTLS(), nil), OnChange: func(string, bool) { changes.Add(1) }})
	lb.SetUpstreams([]string{a.addr})
	lbAddr := startBalancer(t, lb)
	waitFor(t, "a probed", 2*time.Second, func() bool { ok, _ := healthy(lb, a.addr); return ok })
	if got, err := who(p, lbAddr); err != nil || got != "a" {
		t.Fatalf("got %q, %v; want a", got, err)
	}
	conn, err := tls.Dial("tcp", lbAddr, p.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// A new API server joins, the old one leaves: its connections close.
	lb.SetUpstreams([]string{b2.addr})
	if got := lb.Upstreams(); !slices.Equal(got, []string{b2.addr}) {
		t.Fatalf("Upstreams() = %v", got)
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("connection to a removed upstream: %v; want it closed", err)
	}
	waitFor(t, "b probed", 2*time.Second, func() bool { ok, _ := healthy(lb, b2.addr); return ok })
	if got, err := who(p, lbAddr); err != nil || got != "b" {
		t.Fatalf("got %q, %v; want b", got, err)
	}
	if changes.Load() < 2 {
		t.Errorf("OnChange called %d times, want one for each upstream turning healthy", changes.Load())
	}
}

// With no upstream known healthy, the balancer still tries them all, so
// a node starts forwarding from its saved list before any probe answered.
func TestTriesUnprobedAndDownUpstreams(t *testing.T) {
	p := newPKI(t)
	a := startAPIServer(t, p, "a")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	_ = dead.Close()
	block := make(chan struct{})
	defer close(block)
	lb := New(Config{Probe: func(ctx context.Context, _ string) error { <-ctx.Done(); return ctx.Err() }, ProbeTimeout: time.Hour})
	lb.SetUpstreams([]string{deadAddr, a.addr})
	lbAddr := startBalancer(t, lb)
	for range 4 {
		if got, err := who(p, lbAddr); err != nil || got != "a" {
			t.Fatalf("got %q, %v; want a (the other refuses connections)", got, err)
		}
	}
	if ok, _ := healthy(lb, deadAddr); ok {
		t.Errorf("%s refused a connection but is not marked down", deadAddr)
	}
}

func TestProberChecksTheClusterCA(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	a := startAPIServer(t, p, "a")
	tests := []struct {
		name    string
		tls     *tls.Config
		wantErr string
	}{
		{name: "cluster CA", tls: p.clientTLS()},
		{name: "another CA", tls: other.clientTLS(), wantErr: "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := ReadyzProber(tt.tls, nil)(ctx, a.addr)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("probe: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("probe: %v; want an error about %q", err, tt.wantErr)
			}
		})
	}
}

func TestNormalizeUpstreams(t *testing.T) {
	tests := []struct {
		in      []string
		want    []string
		wantErr string
	}{
		{in: []string{"10.0.0.2:6443", "10.0.0.1:6443", "10.0.0.2:6443"}, want: []string{"10.0.0.1:6443", "10.0.0.2:6443"}},
		{in: []string{"[fd00::0001]:6443", "cp.example:443"}, want: []string{"[fd00::1]:6443", "cp.example:443"}},
		{in: []string{"10.0.0.1"}, wantErr: "missing port"},
		{in: []string{"10.0.0.1:0"}, wantErr: "not a number from 1 to 65535"},
		{in: []string{":6443"}, wantErr: "no host"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.in, ","), func(t *testing.T) {
			got, err := NormalizeUpstreams(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestUpstreamsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StateDir, UpstreamsFile)
	if got, err := ReadUpstreams(path); err != nil || got != nil {
		t.Fatalf("missing file: %v, %v; want empty, no error", got, err)
	}
	if err := WriteUpstreams(path, nil); err == nil {
		t.Fatal("an empty list was written")
	}
	if err := WriteUpstreams(path, []string{"10.0.0.2:6443", "10.0.0.1:6443"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("stat: %v, %v; want mode 0644", fi, err)
	}
	got, err := ReadUpstreams(path)
	if err != nil || !slices.Equal(got, []string{"10.0.0.1:6443", "10.0.0.2:6443"}) {
		t.Fatalf("read back %v, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("10.0.0.1:6443\nnot-an-address\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUpstreams(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("bad file: %v; want an error naming %s", err, path)
	}
}

func TestUpstreamsOf(t *testing.T) {
	slice := func(ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Ports: ports, Endpoints: eps}
	}
	https := []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](6443)}}
	tests := []struct {
		name string
		s    *discoveryv1.EndpointSlice
		want []string
	}{
		{name: "three API servers", s: slice(https,
			discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}},
			discoveryv1.Endpoint{Addresses: []string{"fd00::3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}),
			want: []string{"10.0.0.1:6443", "10.0.0.2:6443", "[fd00::3]:6443"}},
		{name: "not ready left out", s: slice(https,
			discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}),
			want: nil},
		{name: "no port", s: slice(nil, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}}), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UpstreamsOf(tt.s); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
