package etcd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// writeSelfSigned writes name.crt and name.key, a self-signed pair, with
// the product's own pki functions.
func writeSelfSigned(t *testing.T, dir, name string) {
	t.Helper()
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: name, Validity: time.Hour}, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteCertAndKey(dir, name, cert, key); err != nil {
		t.Fatal(err)
	}
}

func TestEtcdClientCertsFallBack(t *testing.T) {
	dir := t.TempDir()
	_, cert, key := etcdClientCerts(dir)
	if cert != filepath.Join(dir, "apiserver-etcd-client.crt") || key != filepath.Join(dir, "apiserver-etcd-client.key") {
		t.Errorf("without the health-check pair: %s, %s; want the API server's etcd client pair", cert, key)
	}
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeSelfSigned(t, filepath.Join(dir, "etcd"), "healthcheck-client")
	ca, cert, key := etcdClientCerts(dir)
	if ca != filepath.Join(dir, "etcd", "ca.crt") || cert != filepath.Join(dir, "etcd", "healthcheck-client.crt") || key != filepath.Join(dir, "etcd", "healthcheck-client.key") {
		t.Errorf("with the health-check pair: %s, %s, %s", ca, cert, key)
	}
}
