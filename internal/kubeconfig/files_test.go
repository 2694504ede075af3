package kubeconfig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testCA is the pre-generated ECDSA CA in testdata/ (ca.crt, ca.key).
func testCA(t *testing.T) CA {
	t.Helper()
	ca, err := LoadCA("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if ca.External() {
		t.Fatal("testdata/ca.key was not loaded")
	}
	return ca
}

func otherCA(t *testing.T) *x509.Certificate {
	t.Helper()
	c, err := pki.LoadCert("testdata/other-ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const testValidity = 100 * time.Hour

// testFiles returns a Files writing into a new temporary folder, with a
// clock one hour after the CA's start and fast ECDSA keys.
func testFiles(t *testing.T, ca CA) (Files, time.Time) {
	t.Helper()
	now := ca.Cert.NotBefore.Add(time.Hour)
	return Files{Dir: filepath.Join(t.TempDir(), "kubernetes"), Issuer: Issuer{
		CA:        ca,
		Validity:  testValidity,
		Algorithm: v1beta4.EncryptionAlgorithmECDSAP256,
		Now:       func() time.Time { return now },
	}}, now
}

func testSpecs(t *testing.T) []Spec {
	t.Helper()
	specs, err := ControlPlaneSpecs(initConfig("lb.example.com", "10.1.2.3", 6443), nil)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// redacted returns the file with its secrets and certificates replaced by
// placeholders, for golden comparison of everything else.
func redacted(t *testing.T, path string) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = []byte("CA")
		c.LocationOfOrigin = ""
	}
	for _, u := range cfg.AuthInfos {
		u.LocationOfOrigin = ""
		if len(u.ClientCertificateData) > 0 {
			u.ClientCertificateData = []byte("CERT")
		}
		if len(u.ClientKeyData) > 0 {
			u.ClientKeyData = []byte("KEY")
		}
	}
	for _, c := range cfg.Contexts {
		c.LocationOfOrigin = ""
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkFile checks a written control-plane kubeconfig against its spec.
func checkFile(t *testing.T, path string, spec Spec, ca CA, now time.Time) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %o, want 600", path, st.Mode().Perm())
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctxName := spec.ClientName + "@" + spec.ClusterName
	if cfg.CurrentContext != ctxName || len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 {
		t.Fatalf("%s: current context %q, %d contexts, %d clusters, %d users", path, cfg.CurrentContext, len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos))
	}
	ctx := cfg.Contexts[ctxName]
	if ctx == nil || ctx.Cluster != spec.ClusterName || ctx.AuthInfo != spec.ClientName {
		t.Fatalf("%s: context %+v", path, ctx)
	}
	cluster := cfg.Clusters[spec.ClusterName]
	if cluster.Server != spec.Server {
		t.Errorf("%s: server %q, want %q", path, cluster.Server, spec.Server)
	}
	if !bytes.Equal(cluster.CertificateAuthorityData, pki.EncodeCertPEM(ca.Cert)) {
		t.Errorf("%s: the CA data is not the cluster CA", path)
	}
	user := cfg.AuthInfos[spec.ClientName]
	cert, err := pki.ParseCertPEM(user.ClientCertificateData)
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.ParseKeyPEM(user.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	if !pki.PublicKeysEqual(cert.PublicKey, key.Public()) {
		t.Errorf("%s: the client key does not match the certificate", path)
	}
	if cert.Subject.CommonName != spec.ClientName || !reflect.DeepEqual(cert.Subject.Organization, spec.Organizations) {
		t.Errorf("%s: subject %s, want CN=%s O=%v", path, cert.Subject, spec.ClientName, spec.Organizations)
	}
	if !reflect.DeepEqual(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA {
		t.Errorf("%s: usages %v, CA %v", path, cert.ExtKeyUsage, cert.IsCA)
	}
	if !cert.NotBefore.Equal(ca.Cert.NotBefore) {
		t.Errorf("%s: starts %s, want the CA's start %s", path, cert.NotBefore, ca.Cert.NotBefore)
	}
	if want := now.Add(testValidity).Truncate(time.Second); !cert.NotAfter.Equal(want) {
		t.Errorf("%s: ends %s, want %s", path, cert.NotAfter, want)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("%s: the client certificate does not verify against the CA: %v", path, err)
	}
}

func TestEnsureCreatesEveryFile(t *testing.T) {
	ca := testCA(t)
	files, now := testFiles(t, ca)
	for _, spec := range testSpecs(t) {
		res, err := files.Ensure(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(files.Dir, spec.FileName)
		if res.Action != Created || res.Path != path || len(res.Warnings) != 0 {
			t.Errorf("%s: result %+v", spec.FileName, res)
		}
		checkFile(t, path, spec, ca, now)

		golden := filepath.Join("testdata", "golden", spec.FileName)
		got := redacted(t, path)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n%s", spec.FileName, golden, got)
		}
	}
	if st, err := os.Stat(files.Dir); err != nil || st.Mode().Perm() != DirMode {
		t.Errorf("the created folder: %v %v", st, err)
	}
}

func TestEnsureIsIdempotent(t *testing.T) {
	ca := testCA(t)
	files, _ := testFiles(t, ca)
	specs := testSpecs(t)
	before := map[string][]byte{}
	for _, spec := range specs {
		if _, err := files.Ensure(spec, nil); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(files.Path(spec))
		before[spec.FileName] = b
	}
	if m := files.Missing(specs); len(m) != 0 {
		t.Errorf("missing after creation: %v", m)
	}
	for _, spec := range specs {
		res, err := files.Ensure(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != Kept || len(res.Warnings) != 0 {
			t.Errorf("%s: second run %+v", spec.FileName, res)
		}
		after, _ := os.ReadFile(files.Path(spec))
		if !bytes.Equal(before[spec.FileName], after) {
			t.Errorf("%s changed on the second run", spec.FileName)
		}
	}
}

func TestEnsureUsesGivenKey(t *testing.T) {
	ca := testCA(t)
	files, _ := testFiles(t, ca)
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP384)
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpecs(t)[0]
	if _, err := files.Ensure(spec, key); err != nil {
		t.Fatal(err)
	}
	cert, err := ClientCertificateOf(files.Path(spec))
	if err != nil {
		t.Fatal(err)
	}
	if !pki.PublicKeysEqual(cert.PublicKey, key.Public()) {
		t.Error("the given key was not used")
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P384() {
		t.Errorf("key type %T", cert.PublicKey)
	}
}

func TestEnsureKeyAlgorithm(t *testing.T) {
	ca := testCA(t)
	files, _ := testFiles(t, ca)
	files.Issuer.Algorithm = v1beta4.EncryptionAlgorithmRSA2048
	spec := testSpecs(t)[3]
	if _, err := files.Ensure(spec, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(files.Path(spec))
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := cfg.AuthInfos[spec.ClientName].ClientKeyData
	if !bytes.HasPrefix(keyPEM, []byte("-----BEGIN RSA PRIVATE KEY-----")) {
		t.Errorf("key PEM starts %q", keyPEM[:32])
	}
	key, err := pki.ParseKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := key.(*rsa.PrivateKey); !ok || k.N.BitLen() != 2048 {
		t.Errorf("key %T", key)
	}
}

// rewrite changes an existing kubeconfig file.
func rewrite(t *testing.T, path string, change func(*clientcmdapi.Config)) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	change(cfg)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureExistingFiles(t *testing.T) {
	ca := testCA(t)
	other := otherCA(t)
	caPEM, otherPEM := pki.EncodeCertPEM(ca.Cert), pki.EncodeCertPEM(other)
	cluster := func(c *clientcmdapi.Config) *clientcmdapi.Cluster { return c.Clusters["kubernetes"] }
	tests := []struct {
		name    string
		change  func(t *testing.T, path string)
		wantErr string // substring; "" means kept
		warning string // substring of the one expected warning
	}{
		{name: "another API server is only a warning", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { cluster(c).Server = "https://10.9.9.9:6443" })
		}, warning: "https://10.9.9.9:6443, not https://lb.example.com:6443"},
		{name: "another user is kept", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { c.AuthInfos["kubernetes-admin"] = clientcmdapi.NewAuthInfo() })
		}},
		{name: "another cluster name is kept", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) {
				c.Clusters["other"] = cluster(c)
				delete(c.Clusters, "kubernetes")
				c.Contexts[c.CurrentContext].Cluster = "other"
			})
		}},
		{name: "a bundle starting with the cluster CA", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) {
				cluster(c).CertificateAuthorityData = append(append([]byte{}, caPEM...), otherPEM...)
			})
		}},
		{name: "the CA as a file next to the kubeconfig", change: func(t *testing.T, p string) {
			if err := os.WriteFile(filepath.Join(filepath.Dir(p), "ca.crt"), caPEM, 0o644); err != nil {
				t.Fatal(err)
			}
			rewrite(t, p, func(c *clientcmdapi.Config) {
				cluster(c).CertificateAuthorityData = nil
				cluster(c).CertificateAuthority = "ca.crt"
			})
		}},
		{name: "another CA", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { cluster(c).CertificateAuthorityData = otherPEM })
		}, wantErr: `trusts a CA ("CN=other-ca", the first of 1 certificates) other than the cluster CA`},
		{name: "a bundle where the cluster CA is second", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) {
				cluster(c).CertificateAuthorityData = append(append([]byte{}, otherPEM...), caPEM...)
			})
		}, wantErr: "the first of 2 certificates"},
		{name: "no CA", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { cluster(c).CertificateAuthorityData = nil })
		}, wantErr: "its CA certificate is not valid"},
		{name: "a CA file that does not exist", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) {
				cluster(c).CertificateAuthorityData = nil
				cluster(c).CertificateAuthority = "/nonexistent/ca.crt"
			})
		}, wantErr: "reading its CA certificate"},
		{name: "no current context", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { c.CurrentContext = "" })
		}, wantErr: "has no current context"},
		{name: "a current context that is not defined", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { c.CurrentContext = "nope" })
		}, wantErr: `has no context "nope"`},
		{name: "a context whose cluster is not defined", change: func(t *testing.T, p string) {
			rewrite(t, p, func(c *clientcmdapi.Config) { c.Contexts[c.CurrentContext].Cluster = "nope" })
		}, wantErr: `has no cluster "nope"`},
		{name: "not YAML", change: func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("garbage: ["), 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "reading the kubeconfig file"},
		{name: "empty", change: func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "has no current context"},
	}
	spec := testSpecs(t)[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, _ := testFiles(t, ca)
			if _, err := files.Ensure(spec, nil); err != nil {
				t.Fatal(err)
			}
			path := files.Path(spec)
			tt.change(t, path)
			before, _ := os.ReadFile(path)
			res, err := files.Ensure(spec, nil)
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("an existing file was rewritten")
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and containing %q", err, path, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != Kept {
				t.Errorf("action %v, want Kept", res.Action)
			}
			switch {
			case tt.warning == "" && len(res.Warnings) != 0:
				t.Errorf("unexpected warnings %q", res.Warnings)
			case tt.warning != "" && (len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], tt.warning) || !strings.Contains(res.Warnings[0], path)):
				t.Errorf("warnings %q, want one naming the file and containing %q", res.Warnings, tt.warning)
			}
		})
	}
}

func TestExternalCA(t *testing.T) {
	full := testCA(t)
	external := CA{Cert: full.Cert}
	if !external.External() {
		t.Fatal("a CA without key must be external")
	}
	specs := testSpecs(t)

	// Files made while the key was there are accepted, never rewritten.
	files, _ := testFiles(t, full)
	for _, s := range specs[:4] {
		if _, err := files.Ensure(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	files.Issuer.CA = external
	res, err := files.Ensure(specs[0], nil)
	if err != nil || res.Action != KeptExternal {
		t.Fatalf("existing file with an external CA: %+v, %v", res, err)
	}
	missing := files.Path(specs[4])
	if _, err := files.Ensure(specs[4], nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("a missing file with an external CA: %v, want an error naming %s", err, missing)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a file was created without the CA key")
	}
	if _, err := files.CheckProvided(specs); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("CheckProvided: %v, want an error naming %s", err, missing)
	}
	if _, err := files.CheckProvided(specs[:4]); err != nil {
		t.Fatalf("CheckProvided of the present files: %v", err)
	}
	rewrite(t, files.Path(specs[2]), func(c *clientcmdapi.Config) { c.Clusters["kubernetes"].Server = "https://10.9.9.9:6443" })
	warnings, err := files.CheckProvided(specs[:4])
	if err != nil || len(warnings) != 1 {
		t.Fatalf("CheckProvided with another server: %q, %v", warnings, err)
	}
	rewrite(t, files.Path(specs[1]), func(c *clientcmdapi.Config) {
		c.Clusters["kubernetes"].CertificateAuthorityData = pki.EncodeCertPEM(otherCA(t))
	})
	if _, err := files.CheckProvided(specs[:4]); err == nil || !strings.Contains(err.Error(), files.Path(specs[1])) {
		t.Fatalf("CheckProvided with another CA: %v", err)
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadCA(dir); err == nil {
		t.Fatal("no ca.crt must fail")
	}
	crt, _ := os.ReadFile("testdata/ca.crt")
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), crt, 0o644); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(dir)
	if err != nil || !ca.External() {
		t.Fatalf("ca.crt alone: %+v, %v", ca, err)
	}
	if _, err := LoadCAWithKey(dir); err == nil {
		t.Fatal("LoadCAWithKey without ca.key must fail")
	}
	key, _ := os.ReadFile("testdata/ca.key")
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	if ca, err := LoadCA(dir); err != nil || ca.External() {
		t.Fatalf("ca.crt and ca.key: %+v, %v", ca, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(dir); err == nil {
		t.Fatal("an unreadable ca.key must fail, not mean an external CA")
	}
}

func TestIssuerConfig(t *testing.T) {
	ca := testCA(t)
	files, now := testFiles(t, ca)
	spec := Spec{ClusterName: "prod", Server: "https://lb:6443", ClientName: "alice", Organizations: []string{"dev", "ops"}}

	cfg, err := files.Issuer.Config(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alice.conf")
	if err := WriteFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, spec, ca, now)

	spec.Token = "abcdef.0123456789abcdef"
	cfg, err = files.Issuer.Config(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := cfg.AuthInfos["alice"]
	if u.Token != spec.Token || len(u.ClientCertificateData) != 0 || len(u.ClientKeyData) != 0 {
		t.Errorf("token user %+v", u)
	}
	// A token needs no CA key.
	is := files.Issuer
	is.CA.Key = nil
	if _, err := is.Config(spec, nil); err != nil {
		t.Errorf("token with an external CA: %v", err)
	}
	spec.Token = ""
	if _, err := is.Config(spec, nil); err == nil {
		t.Error("a client certificate without the CA key must fail")
	}
	spec.ClientName = ""
	if _, err := files.Issuer.Config(spec, nil); err == nil {
		t.Error("an empty client name must fail")
	}
}

func TestClientCertificateOf(t *testing.T) {
	ca := testCA(t)
	files, _ := testFiles(t, ca)
	spec := testSpecs(t)[2]
	if _, err := files.Ensure(spec, nil); err != nil {
		t.Fatal(err)
	}
	path := files.Path(spec)
	cert, err := ClientCertificateOf(path)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:node1" {
		t.Errorf("CN %q", cert.Subject.CommonName)
	}

	// A kubelet.conf after TLS bootstrap names the certificate file.
	certPEM := pki.EncodeCertPEM(cert)
	pem := filepath.Join(files.Dir, "kubelet-client-current.pem")
	if err := os.WriteFile(pem, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	rewrite(t, path, func(c *clientcmdapi.Config) {
		u := c.AuthInfos[spec.ClientName]
		u.ClientCertificateData, u.ClientKeyData = nil, nil
		u.ClientCertificate, u.ClientKey = pem, pem
	})
	byPath, err := ClientCertificateOf(path)
	if err != nil || !byPath.Equal(cert) {
		t.Fatalf("certificate by path: %v", err)
	}

	rewrite(t, path, func(c *clientcmdapi.Config) {
		c.AuthInfos[spec.ClientName] = &clientcmdapi.AuthInfo{Token: "x"}
	})
	if _, err := ClientCertificateOf(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("no certificate: %v", err)
	}
	if _, err := ClientCertificateOf(filepath.Join(files.Dir, "nope.conf")); err == nil {
		t.Error("a missing file must fail")
	}
}

func TestEncodeLayout(t *testing.T) {
	ca := testCA(t)
	cfg := NewConfig(Spec{ClusterName: "kubernetes", Server: "https://10.0.0.1:6443", ClientName: "u"}, ca.Cert, clientcmdapi.AuthInfo{Token: "t"})
	b, err := Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " +
		base64.StdEncoding.EncodeToString(pki.EncodeCertPEM(ca.Cert)) +
		"\n    server: https://10.0.0.1:6443\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: u\n  name: u@kubernetes\n" +
		"current-context: u@kubernetes\nkind: Config\nusers:\n- name: u\n  user:\n    token: t\n"
	if string(b) != want {
		t.Errorf("encoded:\n%s\nwant:\n%s", b, want)
	}
}
