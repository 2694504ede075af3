package cli

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// kubeconfigUserSetup writes a cluster CA and a configuration file using
// it, and returns the file's path and the CA.
func kubeconfigUserSetup(t *testing.T, withKey bool) (string, *x509.Certificate) {
	t.Helper()
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", Validity: 24 * time.Hour}, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteCert(certDir, "ca", ca); err != nil {
		t.Fatal(err)
	}
	if withKey {
		if err := pki.WriteKey(certDir, "ca", key); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.1.2.3
  bindPort: 6443
nodeRegistration:
  name: node1
  criSocket: unix:///run/containerd/containerd.sock
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
clusterName: prod
controlPlaneEndpoint: lb.example.com:9443
encryptionAlgorithm: ECDSA-P384
certificatesDir: ` + certDir + "\n"
	path := filepath.Join(dir, "kubeadm.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, ca
}

func TestKubeconfigUser(t *testing.T) {
	cfgPath, ca := kubeconfigUserSetup(t, true)
	tests := []struct {
		name     string
		args     []string
		orgs     []string
		token    string
		validity time.Duration
	}{
		{name: "client certificate", args: []string{"--client-name", "alice"}, validity: 8760 * time.Hour},
		{name: "groups and validity", args: []string{"--client-name", "alice", "--org", "dev", "--org", "ops,qa", "--validity-period", "2h"},
			// DER orders the values of one attribute set, shorter first.
			orgs: []string{"qa", "dev", "ops"}, validity: 2 * time.Hour},
		{name: "token", args: []string{"--client-name", "alice", "--token", "abcdef.0123456789abcdef", "--org", "ignored"},
			token: "abcdef.0123456789abcdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := run(t, append([]string{"kubeconfig", "user", "--config", cfgPath}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.HasSuffix(out, "\n\n") {
				t.Errorf("the output should end with an empty line, as upstream's does")
			}
			cfg, err := clientcmd.Load([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CurrentContext != "alice@prod" {
				t.Errorf("current context %q", cfg.CurrentContext)
			}
			cluster := cfg.Clusters["prod"]
			if cluster == nil || cluster.Server != "https://lb.example.com:9443" {
				t.Fatalf("cluster %+v", cluster)
			}
			if string(cluster.CertificateAuthorityData) != string(pki.EncodeCertPEM(ca)) {
				t.Error("the CA data is not the cluster CA")
			}
			user := cfg.AuthInfos["alice"]
			if user == nil {
				t.Fatal("no user alice")
			}
			if tt.token != "" {
				if user.Token != tt.token || len(user.ClientCertificateData) != 0 {
					t.Errorf("user %+v", user)
				}
				return
			}
			cert, err := pki.ParseCertPEM(user.ClientCertificateData)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != "alice" || !reflect.DeepEqual(cert.Subject.Organization, tt.orgs) {
				t.Errorf("subject %s", cert.Subject)
			}
			if err := cert.CheckSignatureFrom(ca); err != nil {
				t.Error(err)
			}
			if !cert.NotBefore.Equal(ca.NotBefore) {
				t.Errorf("starts %s, want the CA's start %s", cert.NotBefore, ca.NotBefore)
			}
			if lo, hi := start.Add(tt.validity).Add(-time.Second), time.Now().Add(tt.validity); cert.NotAfter.Before(lo) || cert.NotAfter.After(hi) {
				t.Errorf("ends %s, want about %s", cert.NotAfter, hi)
			}
			key, err := pki.ParseKeyPEM(user.ClientKeyData)
			if err != nil {
				t.Fatal(err)
			}
			if !pki.PublicKeysEqual(key.Public(), cert.PublicKey) {
				t.Error("the key does not match the certificate")
			}
			if !strings.HasPrefix(string(user.ClientKeyData), "-----BEGIN EC PRIVATE KEY-----") {
				t.Errorf("key type: %.30s", user.ClientKeyData)
			}
		})
	}
}

func TestKubeconfigUserErrors(t *testing.T) {
	cfgPath, _ := kubeconfigUserSetup(t, true)
	noKeyPath, _ := kubeconfigUserSetup(t, false)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"client name required", []string{"kubeconfig", "user", "--config", cfgPath}, `"client-name" not set`},
		{"empty client name", []string{"kubeconfig", "user", "--config", cfgPath, "--client-name", ""}, "must not be empty"},
		{"no arguments", []string{"kubeconfig", "user", "--config", cfgPath, "--client-name", "a", "extra"}, `unknown command "extra"`},
		{"CA key required", []string{"kubeconfig", "user", "--config", noKeyPath, "--client-name", "a"}, "ca.key"},
		{"CA key required for a token too", []string{"kubeconfig", "user", "--config", noKeyPath, "--client-name", "a", "--token", "x"}, "ca.key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want an error with %q", code, errOut, tt.want)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
		})
	}
}

func TestKubeconfigHelp(t *testing.T) {
	out, _, code := run(t, "kubeconfig", "user", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, f := range []string{"--client-name", "--config", "--org", "--token", "--validity-period", "(default 8760h0m0s)"} {
		if !strings.Contains(out, f) {
			t.Errorf("help lacks %s", f)
		}
	}
	out, _, code = run(t, "kubeconfig")
	if code != 0 || !strings.Contains(out, "user") {
		t.Errorf("kubeconfig alone: exit %d\n%s", code, out)
	}
}
