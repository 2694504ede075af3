package preflight

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// testCertAndKey makes a throw-away self-signed certificate (ECDSA keys
// are fast to generate).
func testCertAndKey(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "etcd-client"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func TestExternalEtcdVersion(t *testing.T) {
	cert, key := testCertAndKey(t)
	files := map[string]string{"/etc/etcd/ca.crt": cert, "/etc/etcd/client.crt": cert, "/etc/etcd/client.key": key, "/etc/etcd/junk": "junk"}
	h := &fakeHost{
		files: files,
		http: map[string]fakeHTTP{
			"https://10.0.0.1:2379/version": {body: `{"etcdserver":"3.6.8","etcdcluster":"3.6.0"}`, wantTLS: true},
			"https://10.0.0.2:2379/version": {body: `{"etcdserver":"3.5.24","etcdcluster":"3.5.0"}`, wantTLS: true},
			"https://10.0.0.3:2379/version": {body: `{"etcdserver":"3.5.0","etcdcluster":"3.5.0"}`, wantTLS: true},
			"https://10.0.0.4:2379/version": {body: `not json`},
			"http://10.0.0.5:2379/version":  {body: `{"etcdserver":"3.6.1"}`},
		},
	}
	secure := func(endpoints ...string) *kubeadm.ExternalEtcd {
		return &kubeadm.ExternalEtcd{Endpoints: endpoints, CAFile: "/etc/etcd/ca.crt", CertFile: "/etc/etcd/client.crt", KeyFile: "/etc/etcd/client.key"}
	}
	runCases(t, []checkCase{
		{name: "supported versions", check: ExternalEtcdVersion(h, secure("https://10.0.0.1:2379", "https://10.0.0.2:2379/")), wantName: "ExternalEtcdVersion"},
		{name: "HTTP endpoints asked instead of the client ones", check: ExternalEtcdVersion(h, &kubeadm.ExternalEtcd{
			Endpoints: []string{"https://10.0.0.9:2379"}, HTTPEndpoints: []string{"http://10.0.0.5:2379"}})},
		{name: "plain http", check: ExternalEtcdVersion(h, &kubeadm.ExternalEtcd{Endpoints: []string{"http://10.0.0.5:2379"}})},
		{name: "one error per bad endpoint, in order", check: ExternalEtcdVersion(h, secure(
			"https://10.0.0.3:2379", "https://10.0.0.1:2379", "https://10.0.0.4:2379", "https://10.0.0.9:2379")),
			wantErrs: []string{
				"the external etcd at https://10.0.0.3:2379 runs version 3.5.0; this kubeadm supports 3.5.24-0 or newer",
				"the external etcd at https://10.0.0.4:2379 answered https://10.0.0.4:2379/version with something that is not a version",
				"asking the external etcd at https://10.0.0.9:2379 for its version",
			}},
		{name: "missing CA", check: ExternalEtcdVersion(h, &kubeadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.1:2379"}, CAFile: "/etc/etcd/nope.crt"}),
			wantErrs: []string{"cannot load the external etcd CA certificate /etc/etcd/nope.crt"}},
		{name: "junk CA", check: ExternalEtcdVersion(h, &kubeadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.1:2379"}, CAFile: "/etc/etcd/junk"}),
			wantErrs: []string{"cannot load the external etcd CA certificate /etc/etcd/junk: it holds no PEM certificate"}},
		{name: "junk key pair", check: ExternalEtcdVersion(h, &kubeadm.ExternalEtcd{Endpoints: []string{"https://10.0.0.1:2379"}, CertFile: "/etc/etcd/junk", KeyFile: "/etc/etcd/junk"}),
			wantErrs: []string{"cannot load the external etcd client certificate and key /etc/etcd/junk, /etc/etcd/junk"}},
	})

	var names []string
	var errs []string
	for _, c := range ExternalEtcdClientCertificates(h, &kubeadm.ExternalEtcd{CAFile: "/etc/etcd/ca.crt", CertFile: "/etc/etcd/missing.crt", KeyFile: "/etc/etcd/missing.key"}) {
		names = append(names, c.Name)
		errs = append(errs, messages(c.Run(t.Context()).Errors)...)
	}
	if len(names) != 3 || names[0] != "ExternalEtcdClientCertificates" {
		t.Errorf("client certificate checks = %q", names)
	}
	want := []string{"/etc/etcd/missing.crt does not exist", "/etc/etcd/missing.key does not exist"}
	if len(errs) != 2 || errs[0] != want[0] || errs[1] != want[1] {
		t.Errorf("client certificate errors = %q, want %q", errs, want)
	}
	if n := len(ExternalEtcdClientCertificates(h, &kubeadm.ExternalEtcd{Endpoints: []string{"http://10.0.0.5:2379"}})); n != 0 {
		t.Errorf("%d client certificate checks without files, want none", n)
	}
}
