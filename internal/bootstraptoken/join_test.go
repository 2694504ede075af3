package bootstraptoken

import (
	"os"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// The hashes of the test CAs, from
// openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | sha256sum.
const (
	caHash      = "sha256:3fbf2b7a8a3971d795b34e92c77fc3365442dbf341b49c16c106523e89176f26"
	otherCAHash = "sha256:8e0e776e51c36eefb33f02a47fd88ffd4ac7eab127edcdaf57b6fabb0eff6f91"
)

func TestCACertHash(t *testing.T) {
	for path, want := range map[string]string{"testdata/ca.crt": caHash, "testdata/other-ca.crt": otherCAHash} {
		cert, err := pki.LoadCert(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := CACertHash(cert); got != want {
			t.Errorf("CACertHash(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestCACertHashes(t *testing.T) {
	a, _ := os.ReadFile("testdata/other-ca.crt")
	b, _ := os.ReadFile("testdata/ca.crt")
	got, err := CACertHashes(append(append(a, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")...), b...))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != otherCAHash+" "+caHash {
		t.Errorf("hashes %v", got)
	}
	if _, err := CACertHashes([]byte("not PEM")); err == nil {
		t.Error("no error for data without a certificate")
	}
}

func TestJoinCommand(t *testing.T) {
	const token = "abcdef." + testSecret
	bundle := writeKubeconfig(t, "    certificate-authority: bundle.crt\n    server: https://cp.example.com:8443")
	a, _ := os.ReadFile("testdata/other-ca.crt")
	b, _ := os.ReadFile("testdata/ca.crt")
	if err := os.WriteFile(strings.TrimSuffix(bundle, "kubeconfig")+"bundle.crt", append(a, b...), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kubeconfig, key, want string
	}{
		{
			name:       "worker (upstream ends the line with a space)",
			kubeconfig: "testdata/admin.conf",
			want:       "kubeadm join 10.199.0.2:6443 --token " + token + " --discovery-token-ca-cert-hash " + caHash + " ",
		},
		{
			name:       "control plane",
			kubeconfig: "testdata/admin.conf",
			key:        "0123",
			want:       "kubeadm join 10.199.0.2:6443 --token " + token + " --discovery-token-ca-cert-hash " + caHash + " --control-plane --certificate-key 0123",
		},
		{
			name:       "one hash per CA certificate",
			kubeconfig: bundle,
			want:       "kubeadm join cp.example.com:8443 --token " + token + " --discovery-token-ca-cert-hash " + otherCAHash + " --discovery-token-ca-cert-hash " + caHash + " ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JoinCommand(tt.kubeconfig, token, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	bad := writeKubeconfig(t, "    certificate-authority: ca.crt\n    server: '::not a url'")
	if _, err := JoinCommand(bad, token, ""); err == nil || strings.Contains(err.Error(), testSecret) {
		t.Errorf("bad server: %v", err)
	}
}
