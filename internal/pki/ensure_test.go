package pki

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func TestEnsureAllIsIdempotent(t *testing.T) {
	cfg := testConfig()
	dir := mustTree(t, cfg)
	before := pkitest.Files(t, dir)
	// A later clock, and no key generator: nothing may be made again.
	opts := Options{
		Now: func() time.Time { return fixedNow().Add(48 * time.Hour) },
		NewKey: func(kubeadm.EncryptionAlgorithmType) (key crypto.Signer, err error) {
			return nil, errors.New("no new key expected")
		},
	}
	results, sa, err := EnsureAll(t.Context(), cfg, dir, opts, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != Reused {
			t.Errorf("%s: outcome %v, want reused", r.Cert.Name, r.Outcome)
		}
	}
	if sa != Reused {
		t.Errorf("sa: outcome %v", sa)
	}
	if after := pkitest.Files(t, dir); !maps.Equal(before, after) {
		t.Errorf("a second run changed the files")
	}
	want := []string{
		"apiserver-etcd-client.crt", "apiserver-etcd-client.key", "apiserver-kubelet-client.crt", "apiserver-kubelet-client.key",
		"apiserver.crt", "apiserver.key", "ca.crt", "ca.key",
		"etcd/ca.crt", "etcd/ca.key", "etcd/healthcheck-client.crt", "etcd/healthcheck-client.key",
		"etcd/peer.crt", "etcd/peer.key", "etcd/server.crt", "etcd/server.key",
		"front-proxy-ca.crt", "front-proxy-ca.key", "front-proxy-client.crt", "front-proxy-client.key",
		"sa.key", "sa.pub",
	}
	if got := fileNames(before); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %v\nwant %v", got, want)
	}
}

func TestEnsureCertOneByOne(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	opts := testOptions(t)
	api := mustLookup("apiserver")
	// A leaf without its CA is refused, naming the CA file.
	_, err := EnsureCert(cfg, dir, api, opts)
	if err == nil || !strings.Contains(err.Error(), CertPath(dir, "ca")) {
		t.Fatalf("leaf without CA: %v", err)
	}
	if files := pkitest.Files(t, dir); len(files) != 0 {
		t.Fatalf("wrote %v", fileNames(files))
	}
	res, err := EnsureCert(cfg, dir, mustLookup("ca"), opts)
	if err != nil || res.Outcome != Generated {
		t.Fatalf("ca: %v %v", res.Outcome, err)
	}
	res, err = EnsureCert(cfg, dir, api, opts)
	if err != nil || res.Outcome != Generated {
		t.Fatalf("apiserver: %v %v", res.Outcome, err)
	}
	if got := fileNames(pkitest.Files(t, dir)); strings.Join(got, " ") != "apiserver.crt apiserver.key ca.crt ca.key" {
		t.Errorf("files %v", got)
	}
	res, err = EnsureCert(cfg, dir, api, opts)
	if err != nil || res.Outcome != Reused {
		t.Fatalf("again: %v %v", res.Outcome, err)
	}
}

func TestExternalCA(t *testing.T) {
	cfg := testConfig()
	dir := mustTree(t, cfg)
	for _, ca := range []string{"ca", "front-proxy-ca", "etcd/ca"} {
		if err := os.Remove(KeyPath(dir, ca)); err != nil {
			t.Fatal(err)
		}
	}
	before := pkitest.Files(t, dir)
	results, _, err := EnsureAll(t.Context(), cfg, dir, testOptions(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		want := Reused
		if r.Cert.IsCA() {
			want = Keyless
		}
		if r.Outcome != want {
			t.Errorf("%s: outcome %v, want %v", r.Cert.Name, r.Outcome, want)
		}
	}
	if !maps.Equal(before, pkitest.Files(t, dir)) {
		t.Error("files changed in external CA mode")
	}
	if !KeylessCA(dir, mustLookup("ca")) {
		t.Error("KeylessCA")
	}

	// A certificate the external CA should have provided is missing: error
	// naming it and the absent CA key; nothing else is written.
	for _, f := range []string{CertPath(dir, "front-proxy-client"), KeyPath(dir, "apiserver")} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			d := copyDir(t, dir)
			rel, _ := filepath.Rel(dir, f)
			if err := os.Remove(filepath.Join(d, rel)); err != nil {
				t.Fatal(err)
			}
			before := pkitest.Files(t, d)
			_, _, err := EnsureAll(t.Context(), cfg, d, testOptions(t), 2)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(d, rel)) || !strings.Contains(err.Error(), ".key is absent") {
				t.Fatalf("got %v", err)
			}
			if !maps.Equal(before, pkitest.Files(t, d)) {
				t.Error("files changed")
			}
		})
	}
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "pki")
	for name, data := range pkitest.Files(t, src) {
		info, err := os.Stat(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), info.Mode()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestUnusableFilesAreErrors(t *testing.T) {
	cfg := testConfig()
	good := mustTree(t, cfg)
	// Another tree, with other keys.
	other := mustTree(t, testConfig(func(c *kubeadm.InitConfiguration) { c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256 }))
	expired := func() time.Time { return fixedNow().Add(366 * 24 * time.Hour) }

	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		cfg   func(*kubeadm.InitConfiguration)
		now   func() time.Time
		cert  string // the certificate to ensure
		file  string // the file the error must name
		want  string
	}{
		{name: "unparsable certificate", cert: "apiserver", file: "apiserver.crt", want: "no PEM certificate",
			setup: func(t *testing.T, d string) { write(t, CertPath(d, "apiserver"), "junk") }},
		{name: "unparsable key", cert: "apiserver", file: "apiserver.key", want: "no PEM private key",
			setup: func(t *testing.T, d string) { write(t, KeyPath(d, "apiserver"), "junk") }},
		{name: "key of another certificate", cert: "apiserver", file: "apiserver.key", want: "does not hold the key",
			setup: func(t *testing.T, d string) { copyFile(t, KeyPath(d, "front-proxy-client"), KeyPath(d, "apiserver")) }},
		{name: "signed by another CA", cert: "apiserver", file: "apiserver.crt", want: "is not signed by the CA",
			setup: func(t *testing.T, d string) {
				copyFile(t, CertPath(other, "apiserver"), CertPath(d, "apiserver"))
				copyFile(t, KeyPath(other, "apiserver"), KeyPath(d, "apiserver"))
			}},
		{name: "missing SAN", cert: "apiserver", file: "apiserver.crt", want: "DNS name new.example.com, the IP address 10.0.0.9",
			cfg: func(c *kubeadm.InitConfiguration) { c.APIServer.CertSANs = []string{"new.example.com", "10.0.0.9"} }},
		{name: "missing etcd SAN", cert: "etcd-peer", file: "etcd/peer.crt", want: "peer.example",
			cfg: func(c *kubeadm.InitConfiguration) { c.Etcd.Local.PeerCertSANs = []string{"peer.example"} }},
		{name: "node renamed", cert: "etcd-server", file: "etcd/server.crt", want: "DNS name node2",
			cfg: func(c *kubeadm.InitConfiguration) { c.NodeRegistration.Name = "node2" }},
		{name: "wrong usage", cert: "apiserver-etcd-client", file: "apiserver-etcd-client.crt", want: "extended key usage client auth",
			setup: func(t *testing.T, d string) {
				copyFile(t, CertPath(d, "etcd/peer"), CertPath(d, "apiserver-etcd-client"))
				copyFile(t, KeyPath(d, "etcd/peer"), KeyPath(d, "apiserver-etcd-client"))
				// etcd/peer has client auth: make a server-only one instead.
				makeLeaf(t, d, "etcd/ca", "apiserver-etcd-client", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
			}},
		{name: "expired leaf", cert: "front-proxy-client", file: "front-proxy-client.crt", want: "expired", now: expired},
		{name: "expired CA", cert: "ca", file: "ca.crt", want: "expired",
			now: func() time.Time { return fixedNow().Add(11 * 365 * 24 * time.Hour) }},
		{name: "CA that is no CA", cert: "ca", file: "ca.crt", want: "not a CA",
			setup: func(t *testing.T, d string) {
				copyFile(t, CertPath(d, "apiserver"), CertPath(d, "ca"))
				copyFile(t, KeyPath(d, "apiserver"), KeyPath(d, "ca"))
			}},
		{name: "CA key mismatch", cert: "ca", file: "ca.key", want: "does not hold the key",
			setup: func(t *testing.T, d string) { copyFile(t, KeyPath(d, "front-proxy-ca"), KeyPath(d, "ca")) }},
		{name: "leaf whose CA is gone", cert: "front-proxy-client", file: "front-proxy-ca.crt", want: "restore the CA",
			setup: func(t *testing.T, d string) { os.Remove(CertPath(d, "front-proxy-ca")) }},
		{name: "CA gone, its key and leaves kept", cert: "front-proxy-ca", file: "front-proxy-client.crt", want: "restore the CA",
			setup: func(t *testing.T, d string) { os.Remove(CertPath(d, "front-proxy-ca")) }},
		{name: "CA and its key gone, leaves kept", cert: "etcd-ca", file: "etcd/ca.crt", want: "restore the CA",
			setup: func(t *testing.T, d string) {
				os.Remove(CertPath(d, "etcd/ca"))
				os.Remove(KeyPath(d, "etcd/ca"))
			}},
		{name: "sa.pub of another key", cert: "sa", file: "sa.pub", want: "not the public half",
			setup: func(t *testing.T, d string) { copyFile(t, PublicKeyPath(other, "sa"), PublicKeyPath(d, "sa")) }},
		{name: "unparsable sa.key", cert: "sa", file: "sa.key", want: "no PEM private key",
			setup: func(t *testing.T, d string) { write(t, KeyPath(d, "sa"), "junk") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, good)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			c := testConfig()
			if tt.cfg != nil {
				tt.cfg(c)
			}
			opts := testOptions(t)
			if tt.now != nil {
				opts.Now = tt.now
			}
			before := pkitest.Files(t, dir)
			var err error
			if tt.cert == "sa" {
				_, err = EnsureServiceAccountKey(c, dir, opts)
			} else {
				_, err = EnsureCert(c, dir, mustLookup(tt.cert), opts)
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tt.file)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error naming %s and saying %q", err, tt.file, tt.want)
			}
			if !maps.Equal(before, pkitest.Files(t, dir)) {
				t.Error("files changed")
			}
			// EnsureAll fails too, and writes nothing either.
			if _, _, err := EnsureAll(t.Context(), c, dir, opts, 2); err == nil || !strings.Contains(err.Error(), dir) {
				t.Errorf("EnsureAll: %v", err)
			}
			if !maps.Equal(before, pkitest.Files(t, dir)) {
				t.Error("EnsureAll changed files")
			}
		})
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(b))
}

// makeLeaf replaces base in dir with a certificate signed by ca having
// only the given usages.
func makeLeaf(t *testing.T, dir, ca, base string, usages []x509.ExtKeyUsage) {
	t.Helper()
	caCert, caKey, err := LoadCertAndKey(dir, ca)
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := NewSignedCert(CertSpec{CommonName: base, Usages: usages, Validity: time.Hour * 24 * 365}, key.Public(), caCert, caKey, fixedNow())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCertAndKey(dir, base, cert, key); err != nil {
		t.Fatal(err)
	}
}

// TestConvergesAfterInterruption interrupts the creation of the tree after
// each possible number of file writes, then runs again: the result is
// always a complete, valid tree that kept what the first run finished.
func TestConvergesAfterInterruption(t *testing.T) {
	cfg := testConfig(func(c *kubeadm.InitConfiguration) { c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256 })
	const files = 22
	for n := range files {
		dir := filepath.Join(t.TempDir(), "pki")
		var writes atomic.Int32
		crash := Options{Now: fixedNow, Write: func(path string, data []byte, mode os.FileMode) error {
			if writes.Add(1) > int32(n) {
				return errors.New("interrupted")
			}
			return atomicfile.Write(path, data, mode)
		}}
		// Sequentially, so that exactly n files get written.
		var err error
		for _, c := range Certificates(&cfg.ClusterConfiguration) {
			if _, err = EnsureCert(cfg, dir, c, crash); err != nil {
				break
			}
		}
		if err == nil {
			_, err = EnsureServiceAccountKey(cfg, dir, crash)
		}
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("after %d writes: %v", n, err)
		}
		partial := pkitest.Files(t, dir)
		if len(partial) != n {
			t.Fatalf("after %d writes: %d files %v", n, len(partial), fileNames(partial))
		}
		for name := range partial {
			if strings.Contains(name, ".tmp") {
				t.Fatalf("temporary file %s left", name)
			}
		}
		if _, _, err := EnsureAll(t.Context(), cfg, dir, Options{Now: fixedNow}, 2); err != nil {
			t.Fatalf("re-run after %d writes: %v", n, err)
		}
		final := pkitest.Files(t, dir)
		if len(final) != files {
			t.Fatalf("re-run after %d writes: %d files", n, len(final))
		}
		// Every file written before the interruption is kept, a key
		// whose certificate was not written yet included.
		for name, data := range partial {
			if final[name] != data {
				t.Errorf("after %d writes: %s was rewritten", n, name)
			}
		}
		if _, _, err := EnsureAll(t.Context(), cfg, dir, Options{Now: fixedNow}, 2); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(final, pkitest.Files(t, dir)) {
			t.Errorf("after %d writes: third run changed files", n)
		}
	}
}

// TestLeftKeyOfAnotherAlgorithm: a key left without its certificate is
// replaced when it is not what the configured algorithm makes.
func TestLeftKeyOfAnotherAlgorithm(t *testing.T) {
	cfg := testConfig(func(c *kubeadm.InitConfiguration) { c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256 })
	dir := filepath.Join(t.TempDir(), "pki")
	other, err := NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP384)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKey(atomicfile.Write, dir, "ca", other); err != nil {
		t.Fatal(err)
	}
	ca, _ := LookupCert(CAName)
	res, err := EnsureCert(cfg, dir, ca, Options{Now: fixedNow})
	if err != nil || res.Outcome != Generated {
		t.Fatalf("%v %v", res.Outcome, err)
	}
	key, err := LoadKey(KeyPath(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	if PublicKeysEqual(key.Public(), other.Public()) || !PublicKeysEqual(key.Public(), res.Certificate.PublicKey) {
		t.Error("the P-384 key left behind was kept for a P-256 configuration")
	}
}

// TestInterruptedWriteKeepsOldFile: a write that fails leaves the previous
// file in place, whole.
func TestInterruptedWriteKeepsOldFile(t *testing.T) {
	cfg := testConfig()
	dir := mustTree(t, cfg)
	before := pkitest.Files(t, dir)
	failing := func(path string, data []byte, mode os.FileMode) error {
		if strings.HasSuffix(path, ".crt") {
			// Write half of it the atomic way to a temporary file, then fail
			// as a crash before the rename would.
			tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
			if err != nil {
				return err
			}
			tmp.Write(data[:len(data)/2])
			tmp.Close()
			os.Remove(tmp.Name())
			return errors.New("disk full")
		}
		return atomicfile.Write(path, data, mode)
	}
	opts := testOptions(t)
	opts.Write = failing
	if _, err := RenewCert(&cfg.ClusterConfiguration, dir, mustLookup("apiserver"), opts); err == nil {
		t.Fatal("want the write error")
	}
	after := pkitest.Files(t, dir)
	if after["apiserver.crt"] != before["apiserver.crt"] {
		t.Error("apiserver.crt changed")
	}
	if _, err := ParseCertPEM([]byte(after["apiserver.crt"])); err != nil {
		t.Error(err)
	}
}

func TestServiceAccountKey(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	opts := testOptions(t)
	out, err := EnsureServiceAccountKey(cfg, dir, opts)
	if err != nil || out != Generated {
		t.Fatalf("%v %v", out, err)
	}
	files := pkitest.Files(t, dir)
	os.Remove(PublicKeyPath(dir, "sa"))
	out, err = EnsureServiceAccountKey(cfg, dir, opts)
	if err != nil || out != Reused {
		t.Fatalf("%v %v", out, err)
	}
	if !maps.Equal(files, pkitest.Files(t, dir)) {
		t.Error("sa.pub was not restored as it was")
	}
	checkModes(t, dir)
}

func TestKeyPool(t *testing.T) {
	var made atomic.Int32
	gen := func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		made.Add(1)
		return NewPrivateKey(alg)
	}
	p := NewKeyPool(context.Background(), gen, v1beta4.EncryptionAlgorithmECDSAP256, []string{"a", "b", "a"}, 4)
	a1, _ := p.Generator("a")(v1beta4.EncryptionAlgorithmECDSAP256)
	a2, _ := p.Generator("a")(v1beta4.EncryptionAlgorithmECDSAP256)
	b, _ := p.Generator("b")(v1beta4.EncryptionAlgorithmECDSAP256)
	c, _ := p.Generator("c")(v1beta4.EncryptionAlgorithmECDSAP256)
	if a1 == nil || a2 == nil || b == nil || c == nil {
		t.Fatal("nil key")
	}
	if PublicKeysEqual(a1.Public(), a2.Public()) || PublicKeysEqual(a1.Public(), b.Public()) {
		t.Error("a pooled key was handed out twice")
	}
	if made.Load() != 4 {
		t.Errorf("made %d keys, want 4", made.Load())
	}
	rsaKey, err := p.Generator("b")(v1beta4.EncryptionAlgorithmRSA2048)
	if _, isRSA := rsaKey.(*rsa.PrivateKey); err != nil || !isRSA {
		t.Errorf("another algorithm: %T %v", rsaKey, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = NewKeyPool(ctx, gen, v1beta4.EncryptionAlgorithmECDSAP256, []string{"x"}, 1)
	if _, err := p.Generator("x")(v1beta4.EncryptionAlgorithmECDSAP256); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled pool: %v", err)
	}
}

// TestHeldKeyPool: a held pool makes its first keys at once and the others
// only after the hold is released, by Release or by a Take that would
// otherwise wait for a key nobody makes.
func TestHeldKeyPool(t *testing.T) {
	alg := v1beta4.EncryptionAlgorithmECDSAP256
	var made atomic.Int32
	gen := func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		made.Add(1)
		return NewPrivateKey(alg)
	}
	waitMade := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for made.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("made %d keys, want %d", made.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}

	hold := NewKeyHold()
	p := NewHeldKeyPool(context.Background(), gen, alg, []string{"a", "b", "c"}, 1, hold)
	if k, ok, err := p.Take("a"); !ok || k == nil || err != nil {
		t.Fatalf("first key: %v %v %v", k, ok, err)
	}
	time.Sleep(20 * time.Millisecond)
	if made.Load() != 1 {
		t.Fatalf("made %d keys before the release, want 1", made.Load())
	}
	hold.Release()
	hold.Release()
	waitMade(3)

	// Nobody releases: the second Take does.
	made.Store(0)
	p = NewHeldKeyPool(context.Background(), gen, alg, []string{"a", "b"}, 1, NewKeyHold())
	for _, n := range []string{"b", "a"} {
		if k, ok, err := p.Take(n); !ok || k == nil || err != nil {
			t.Fatalf("take %s: %v %v %v", n, k, ok, err)
		}
	}
	waitMade(2)

	// A nil hold holds nothing back.
	made.Store(0)
	NewHeldKeyPool(context.Background(), gen, alg, []string{"a", "b"}, 0, nil)
	waitMade(2)
}

// TestEnsureAllMakesKeysInParallel: the keys of the tree are made on as
// many goroutines as asked.
func TestEnsureAllMakesKeysInParallel(t *testing.T) {
	cfg := testConfig()
	keys := newTestKeys(t)
	var running, most atomic.Int32
	slow := func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		return keys.gen(alg)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	if _, _, err := EnsureAll(t.Context(), cfg, dir, Options{Now: fixedNow, NewKey: slow}, 3); err != nil {
		t.Fatal(err)
	}
	if most.Load() != 3 {
		t.Errorf("at most %d keys were made at once, want 3", most.Load())
	}
}
