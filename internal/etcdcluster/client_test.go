package etcdcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigCheck(t *testing.T) {
	good := Config{Endpoints: []string{"https://10.0.0.1:2379"}, DialTimeout: time.Second, CallTimeout: time.Second, RetryTimeout: time.Second}
	if err := good.check(); err != nil {
		t.Fatalf("check of a good configuration: %v", err)
	}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"no endpoint", func(c *Config) { c.Endpoints = nil }, "no endpoint"},
		{"bad endpoint", func(c *Config) { c.Endpoints = []string{"10.0.0.1:2379"} }, "scheme"},
		{"no dial timeout", func(c *Config) { c.DialTimeout = 0 }, "dial timeout"},
		{"no call timeout", func(c *Config) { c.CallTimeout = 0 }, "call timeout"},
		{"no retry timeout", func(c *Config) { c.RetryTimeout = -time.Second }, "retry timeout"},
		{"negative back-off", func(c *Config) { c.Backoff = Backoff{Initial: -1} }, "must not be negative"},
		{"back-off without a first pause", func(c *Config) { c.Backoff = Backoff{Max: time.Second} }, "first pause"},
	}
	for _, tt := range tests {
		cfg := good
		tt.change(&cfg)
		if err := cfg.check(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: check = %v, want an error with %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: 350 * time.Millisecond}
	var d time.Duration
	var got []time.Duration
	for range 5 {
		d = b.next(d)
		got = append(got, d)
	}
	want := []time.Duration{100, 200, 350, 350, 350}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
	if c := newClient(newFake(), Config{}); c.backoff != DefaultBackoff() {
		t.Errorf("zero back-off became %v, want the default", c.backoff)
	}
}

// writePair writes a self-signed certificate and its key as PEM files.
func writePair(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writePair(t, dir, "ca")
	cert, key := writePair(t, dir, "client")
	base := Config{Endpoints: []string{"https://127.0.0.1:1"}, DialTimeout: time.Second, CallTimeout: time.Second, RetryTimeout: time.Second}

	cfg := base
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = ca, cert, key
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if eps := c.Endpoints(); len(eps) != 1 || eps[0] != "https://127.0.0.1:1" {
		t.Errorf("Endpoints = %v", eps)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	tests := []struct {
		name           string
		ca, cert, key  string
		wantErr        string
		mustNotContain string
	}{
		{name: "missing CA", ca: filepath.Join(dir, "none.crt"), cert: cert, key: key, wantErr: "reading the etcd CA certificate"},
		{name: "CA not PEM", ca: caKey + ".txt", cert: cert, key: key, wantErr: "no PEM certificate"},
		{name: "key of another certificate", ca: ca, cert: cert, key: caKey, wantErr: "loading the etcd client certificate"},
		{name: "no key named", ca: ca, cert: cert, wantErr: "must all be given"},
	}
	if err := os.WriteFile(caKey+".txt", []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		cfg := base
		cfg.CAFile, cfg.CertFile, cfg.KeyFile = tt.ca, tt.cert, tt.key
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: New = %v, want an error with %q", tt.name, err, tt.wantErr)
		}
	}
}

// A call that runs out of time says what its last attempt got, not only
// that the time ran out: here, with etcd's real client, that nothing
// listens.
func TestCallTimeoutSaysWhy(t *testing.T) {
	dir := t.TempDir()
	ca, _ := writePair(t, dir, "ca")
	cert, key := writePair(t, dir, "client")
	api, err := NewV3Client(Config{
		Endpoints: []string{"https://127.0.0.1:2379"}, CAFile: ca, CertFile: cert, KeyFile: key,
		DialTimeout: time.Second, CallTimeout: time.Second, RetryTimeout: time.Second,
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			return nil, fmt.Errorf("dialing %s: nothing listens", addr)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	err = Bounded(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
		_, err := api.MemberList(ctx)
		return err
	})
	t.Logf("MemberList: %v", err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "dialing 127.0.0.1:2379: nothing listens") {
		t.Errorf("MemberList with nothing listening = %v; want a deadline that says why", err)
	}
	// Status makes a connection of its own, with the same options.
	err = Bounded(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
		_, err := api.Status(ctx, "https://127.0.0.2:2379")
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "dialing 127.0.0.2:2379: nothing listens") {
		t.Errorf("Status with nothing listening = %v; want a deadline that says why", err)
	}
	// Other errors, and a call that does not time out, are as they were.
	plain := errors.New("refused")
	if got := Bounded(context.Background(), time.Second, func(context.Context) error { return plain }); got != plain {
		t.Errorf("Bounded changed an error that is not a timeout: %v", got)
	}
}
