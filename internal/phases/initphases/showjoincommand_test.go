package initphases

import (
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"

	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
)

// The golden files hold upstream kubeadm's closing lines for the same
// inputs (test/compat's TestInitClosingLines compares with upstream's own
// output).

// Hashes upstream kubeadm v1.36.3 printed in its join commands for
// testdata/join-ca.crt and testdata/join-front-proxy-ca.crt (public test
// certificates of a throw-away cluster).
const (
	joinCAHash         = "sha256:8f4bf62e82c739b9d83906b9aa0c39fed8ba5e94531f24e533caa87029a707c8"
	joinFrontProxyHash = "sha256:cc0237767836a811d1d8101598799941bd4d1cad318596d9589cc910b812965b"
)

const showJoinTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

// writeAdminConf writes a kubeconfig for server trusting the CA bundle of
// the given testdata files and returns its path.
func writeAdminConf(t *testing.T, dir, server string, caFiles ...string) string {
	t.Helper()
	var ca []byte
	for _, f := range caFiles {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		ca = append(ca, b...)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["kubernetes-admin"] = &clientcmdapi.AuthInfo{Token: "not-used"}
	cfg.Contexts["kubernetes-admin@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: "kubernetes-admin"}
	cfg.CurrentContext = "kubernetes-admin@kubernetes"
	path := filepath.Join(dir, "admin.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestShowJoinCommand(t *testing.T) {
	tests := []struct {
		name       string
		config     string // the whole configuration (default showJoinTestConfig+extra)
		extra      string // appended to the ClusterConfiguration
		caFiles    []string
		upload     bool
		skipToken  bool
		skipKey    bool
		certKey    string
		wantGolden string
	}{
		{name: "worker only", caFiles: []string{"join-ca.crt"}, wantGolden: "show-join-command-worker.golden"},
		{name: "control plane, certificates uploaded", extra: "controlPlaneEndpoint: cp.example.test:6443\n",
			caFiles: []string{"join-ca.crt"}, upload: true, certKey: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
			wantGolden: "show-join-command-uploaded.golden"},
		{name: "control plane, certificates copied by hand", extra: "controlPlaneEndpoint: cp.example.test\n",
			caFiles: []string{"join-ca.crt"}, wantGolden: "show-join-command-copied.golden"},
		// A key from the configuration (certificates uploaded earlier):
		// upstream prints it in the command under the copy-by-hand text.
		{name: "control plane, key given, not uploaded", extra: "controlPlaneEndpoint: cp.example.test\n",
			caFiles: []string{"join-ca.crt"}, certKey: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
			wantGolden: "show-join-command-key-not-uploaded.golden"},
		{name: "secrets withheld", extra: "controlPlaneEndpoint: cp.example.test\n", caFiles: []string{"join-ca.crt"},
			upload: true, skipToken: true, skipKey: true, certKey: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
			wantGolden: "show-join-command-withheld.golden"},
		{name: "two tokens, two CAs", config: `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
- token: bcdefg.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`, caFiles: []string{"join-ca.crt", "join-front-proxy-ca.crt"}, wantGolden: "show-join-command-two.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := tt.config
			if yaml == "" {
				yaml = showJoinTestConfig + tt.extra
			}
			cfg := configtest.InitConfiguration(t, yaml, "10.199.0.2")
			cfg.CertificateKey = tt.certKey
			dir := t.TempDir()
			writeAdminConf(t, dir, "https://10.199.0.2:6443", tt.caFiles...)
			out := &bytes.Buffer{}
			d := &Data{Cfg: cfg, KubeconfigDir: "/etc/kubernetes", KubeconfigPath: filepath.Join(dir, "admin.conf"),
				UploadCerts: tt.upload, SkipTokenPrint: tt.skipToken, SkipCertificateKeyPrint: tt.skipKey, Out: out}
			if err := showJoinCommand(d); err != nil {
				t.Fatal(err)
			}
			got := bytes.ReplaceAll(out.Bytes(), []byte(dir), []byte("/etc/kubernetes"))
			checkGolden(t, tt.wantGolden, got)
		})
	}
}

// checkGolden compares got with testdata/name; with KUBEADM_UPDATE_GOLDEN=1
// it rewrites the file instead.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("KUBEADM_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestCACertHashes(t *testing.T) {
	var bundle []byte
	for _, f := range []string{"join-ca.crt", "join-front-proxy-ca.crt"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		bundle = append(bundle, b...)
	}
	got, err := bootstraptoken.CACertHashes(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{joinCAHash, joinFrontProxyHash}; !reflect.DeepEqual(got, want) {
		t.Errorf("hashes %q, want upstream's %q", got, want)
	}
	if _, err := bootstraptoken.CACertHashes([]byte("no PEM here")); err == nil {
		t.Error("a bundle without certificates gave hashes")
	}
}

func TestJoinTarget(t *testing.T) {
	tests := []struct {
		server, want string
	}{
		{"https://10.199.0.2:6443", "10.199.0.2:6443"},
		{"https://cp.example.test:443", "cp.example.test:443"},
		{"https://[fd00::2]:6443", "[fd00::2]:6443"},
	}
	for _, tt := range tests {
		path := writeAdminConf(t, t.TempDir(), tt.server, "join-ca.crt")
		got, hashes, err := joinTarget(path)
		if err != nil || got != tt.want || !reflect.DeepEqual(hashes, []string{joinCAHash}) {
			t.Errorf("joinTarget(%s) = %q, %q, %v; want %q", tt.server, got, hashes, err, tt.want)
		}
	}

	// A CA given as a file, relative to the kubeconfig's folder.
	dir := t.TempDir()
	ca, _ := os.ReadFile(filepath.Join("testdata", "join-ca.crt"))
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthority: "ca.crt"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c"}
	cfg.CurrentContext = "x"
	path := filepath.Join(dir, "admin.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if _, hashes, err := joinTarget(path); err != nil || !reflect.DeepEqual(hashes, []string{joinCAHash}) {
		t.Errorf("CA file: %q, %v", hashes, err)
	}

	if _, _, err := joinTarget(filepath.Join(dir, "missing.conf")); err == nil {
		t.Error("a missing kubeconfig gave a join target")
	}
}
