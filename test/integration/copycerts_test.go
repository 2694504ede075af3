package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// Test-only bootstrap token of a joining control-plane node.
const ccTokenID, ccTokenSecret = "certsj", "0123456789abcdef"

// TestKubeadmCertsChecked (issue 29): a kubeadm-certs Secret uploaded from
// a real control plane's files downloads with the bootstrap token, as a
// joining control-plane node reads it; the same Secret with a missing, a
// swapped or a corrupt entry is refused, naming the entry, and nothing is
// written under the target folder.
func TestKubeadmCertsChecked(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	ctx := testContext(t, 2*time.Minute)
	admin := cp.Client()
	pkiDir := cp.HostPath("/etc/kubernetes/pki")
	local := kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}}
	key, err := copycerts.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := copycerts.Upload(ctx, admin, copycerts.UploadOptions{Files: copycerts.Files(pkiDir, local), Key: key, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	uploaded, err := admin.CoreV1().Secrets("kube-system").Get(ctx, copycerts.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	trustedCA, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	joining := ccTokenClient(t, cp, admin)

	download := func(t *testing.T) (string, error) {
		t.Helper()
		dir := t.TempDir()
		files := copycerts.Files(filepath.Join(dir, "pki"), local)
		err := copycerts.Download(ctx, joining, copycerts.DownloadOptions{Files: files, Key: key, TrustedCA: trustedCA})
		return dir, err
	}

	t.Run("the Secret as uploaded", func(t *testing.T) {
		dir, err := download(t)
		if err != nil {
			t.Fatal(err)
		}
		node := copycerts.Files(pkiDir, local)
		for i, f := range copycerts.Files(filepath.Join(dir, "pki"), local) {
			got, err := os.ReadFile(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := os.ReadFile(node[i].Path); !bytes.Equal(got, want) {
				t.Errorf("downloaded %s differs from the node's", f.Key)
			}
		}
	})

	// A value sealed with the certificate key: it decrypts, so only the
	// checks after decryption can catch what it holds.
	seal := func(t *testing.T, plain string) []byte {
		t.Helper()
		k, err := copycerts.ParseKey(key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := copycerts.Encrypt([]byte(plain), k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	faults := []struct {
		name   string
		change func(t *testing.T, data map[string][]byte)
		want   []string
	}{
		{name: "missing entry", change: func(_ *testing.T, d map[string][]byte) { delete(d, "etcd-ca.key") },
			want: []string{`entry "etcd-ca.key"`, "missing"}},
		{name: "swapped entries", change: func(_ *testing.T, d map[string][]byte) {
			d["ca.key"], d["front-proxy-ca.key"] = d["front-proxy-ca.key"], d["ca.key"]
		}, want: []string{`entry "ca.key" is not the private key of "ca.crt"`, `entry "front-proxy-ca.key" is not the private key of "front-proxy-ca.crt"`}},
		{name: "corrupt entry that decrypts", change: func(t *testing.T, d map[string][]byte) { d["sa.pub"] = seal(t, "not a public key\n") },
			want: []string{`entry "sa.pub" is not a PEM public key`}},
		{name: "corrupt entry that does not decrypt", change: func(_ *testing.T, d map[string][]byte) {
			b := bytes.Clone(d["front-proxy-ca.crt"])
			b[len(b)/2] ^= 0xff
			d["front-proxy-ca.crt"] = b
		}, want: []string{`"front-proxy-ca.crt"`, "does not decrypt"}},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			s, err := admin.CoreV1().Secrets("kube-system").Get(ctx, copycerts.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s.Data = map[string][]byte{}
			for k, v := range uploaded.Data {
				s.Data[k] = bytes.Clone(v)
			}
			fault.change(t, s.Data)
			if _, err := admin.CoreV1().Secrets("kube-system").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			dir, err := download(t)
			if err == nil {
				t.Fatal("the download accepted the Secret")
			}
			t.Logf("refused: %v", err)
			for _, w := range fault.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
			if strings.Contains(err.Error(), key) {
				t.Error("the error shows the certificate key")
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a refused download wrote %v", left)
			}
		})
	}
}

// ccTokenClient creates a bootstrap token of kubeadm's node group (the
// group kubeadm-certs's RoleBinding names) and returns a client that
// authenticates with it.
func ccTokenClient(t *testing.T, cp *controlplane.ControlPlane, admin kubernetes.Interface) kubernetes.Interface {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + ccTokenID, Namespace: "kube-system"},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               ccTokenID,
			bootstrapapi.BootstrapTokenSecretKey:           ccTokenSecret,
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      copycerts.NodeBootstrapTokenGroup,
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}
	if _, err := admin.CoreV1().Secrets("kube-system").Create(ctx, token, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := bareConfig(t, cp)
	cfg.BearerToken = ccTokenID + "." + ccTokenSecret
	c, err := apiclient.FromRESTConfig(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The token authenticates at once, but say so if it does not.
	eventually(ctx, t, "the token reads kubeadm-certs", func() error {
		_, err := c.CoreV1().Secrets("kube-system").Get(ctx, copycerts.SecretName, metav1.GetOptions{})
		return err
	})
	return c
}
