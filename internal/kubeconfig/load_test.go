package kubeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// sparseFile makes a file of size bytes that takes no room on disk.
func sparseFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.conf")
	sparseFile(t, path, boundedread.MaxFile+1)
	_, err := Load(path)
	if !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "10 MiB") {
		t.Fatalf("Load of a file over the limit: %v, want an error naming the file and the limit", err)
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://cp.example:6443", CertificateAuthority: "pki/ca.crt"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: "pki/u.crt", ClientKey: "/abs/u.key"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(dir, "u.conf")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ca := got.Clusters["c"].CertificateAuthority; ca != filepath.Join(dir, "pki/ca.crt") {
		t.Errorf("CA path %q, want it relative to the file's folder", ca)
	}
	if u := got.AuthInfos["u"]; u.ClientCertificate != filepath.Join(dir, "pki/u.crt") || u.ClientKey != "/abs/u.key" {
		t.Errorf("user %+v", u)
	}
}

func TestRESTConfigEmbedsFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := os.ReadFile("testdata/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"ca.crt": string(ca), "token": "abcdef.0123456789abcdef\n", "unused.crt": ""}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://cp.example:6443", CertificateAuthority: filepath.Join(dir, "ca.crt")}
	cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other:6443", CertificateAuthority: filepath.Join(dir, "absent.crt")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "token")}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	before := cfg.DeepCopy()

	rc, err := RESTConfig(cfg, "https://10.0.0.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.0.0.1:6443" {
		t.Errorf("host %q, want the override", rc.Host)
	}
	if string(rc.CAData) != string(ca) || rc.CAFile != "" {
		t.Errorf("CA file %q, data %d bytes: want the CA embedded", rc.CAFile, len(rc.CAData))
	}
	if rc.BearerToken != "abcdef.0123456789abcdef" || rc.BearerTokenFile != "" {
		t.Errorf("token %q, file %q: want the token embedded", rc.BearerToken, rc.BearerTokenFile)
	}
	if !reflect.DeepEqual(cfg, before) {
		t.Error("RESTConfig changed its argument")
	}
	if rc, err := RESTConfig(cfg, ""); err != nil || rc.Host != "https://cp.example:6443" {
		t.Errorf("without override: %v, %v", rc, err)
	}

	// A named file over the limit is refused, naming it.
	big := filepath.Join(dir, "big.crt")
	sparseFile(t, big, boundedread.MaxFile+1)
	cfg.Clusters["c"].CertificateAuthority = big
	if _, err := RESTConfig(cfg, ""); !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), big) {
		t.Errorf("a CA file over the limit: %v", err)
	}
}
