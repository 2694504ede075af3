package pki

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func TestRenewCert(t *testing.T) {
	cfg := testConfig(func(c *kubeadm.InitConfiguration) {
		c.APIServer.CertSANs = []string{"extra.example", "10.0.0.7"}
	})
	dir := mustTree(t, cfg)
	old, oldKey, err := LoadCertAndKey(dir, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	// Renewal keeps the names of the old certificate, whatever the
	// configuration says now, and takes the algorithm and lifetime from it.
	later := func() time.Time { return fixedNow().Add(100 * 24 * time.Hour) }
	now := testConfig(func(c *kubeadm.InitConfiguration) {
		c.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256
		c.CertificateValidityPeriod = &metav1.Duration{Duration: 48 * time.Hour}
	})
	cert, err := RenewCert(&now.ClusterConfiguration, dir, mustLookup("apiserver"), Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	got, key, err := LoadCertAndKey(dir, "apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(cert) || PublicKeysEqual(key.Public(), oldKey.Public()) {
		t.Error("the files do not hold the renewed pair with a new key")
	}
	if got.Subject.String() != old.Subject.String() || !slices.Equal(got.DNSNames, old.DNSNames) ||
		len(got.IPAddresses) != len(old.IPAddresses) || !slices.Equal(got.ExtKeyUsage, old.ExtKeyUsage) {
		t.Errorf("renewed %v %v %v, old %v %v %v", got.Subject, got.DNSNames, got.IPAddresses, old.Subject, old.DNSNames, old.IPAddresses)
	}
	if !got.NotAfter.Equal(later().Add(48*time.Hour)) || !got.NotBefore.Equal(later().Add(-Backdate)) {
		t.Errorf("validity %s to %s", got.NotBefore, got.NotAfter)
	}
	checkKeyType(t, "renewed", key.Public(), v1beta4.EncryptionAlgorithmECDSAP256)
	// The renewed certificate is reused by the phase.
	if _, err := EnsureCert(cfg, dir, mustLookup("apiserver"), Options{Now: later}); err != nil {
		t.Error(err)
	}
	checkModes(t, dir)

	os.Remove(CertPath(dir, "front-proxy-client"))
	if _, err := RenewCert(&cfg.ClusterConfiguration, dir, mustLookup("front-proxy-client"), testOptions(t)); !errors.Is(err, ErrMissing) {
		t.Errorf("missing: %v", err)
	}
	os.Remove(KeyPath(dir, "etcd/ca"))
	before := pkitest.Files(t, dir)
	var ext *ExternalCAError
	if _, err := RenewCert(&cfg.ClusterConfiguration, dir, mustLookup("etcd-peer"), testOptions(t)); !errors.As(err, &ext) || ext.KeyPath != KeyPath(dir, "etcd/ca") {
		t.Errorf("external CA: %v", err)
	}
	if len(before) != len(pkitest.Files(t, dir)) {
		t.Error("files changed")
	}
}

// writeKubeconfig writes a complete kubeconfig like kubeadm's for k.
func writeKubeconfig(t *testing.T, cfg *kubeadm.InitConfiguration, certDir, path string, k KubeconfigCert) *x509.Certificate {
	t.Helper()
	key, err := NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := PartialKubeconfig(cfg, k, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey, err := LoadCertAndKey(certDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := NewSignedCert(k.Spec(cfg), key.Public(), ca, caKey, fixedNow())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(partial, &doc); err != nil {
		t.Fatal(err)
	}
	doc["clusters"].([]any)[0].(map[string]any)["cluster"].(map[string]any)["certificate-authority-data"] = base64.StdEncoding.EncodeToString(EncodeCertPEM(ca))
	doc["users"].([]any)[0].(map[string]any)["user"].(map[string]any)["client-certificate-data"] = base64.StdEncoding.EncodeToString(EncodeCertPEM(cert))
	doc["preferences"] = map[string]any{}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestKubeconfigCerts(t *testing.T) {
	cfg := testConfig()
	certDir := mustTree(t, cfg)
	kdir := t.TempDir()
	admin, _ := LookupKubeconfig("admin.conf")
	path := filepath.Join(kdir, "admin.conf")
	orig := writeKubeconfig(t, cfg, certDir, path, admin)

	got, err := ReadKubeconfigClientCert(path)
	if err != nil || !got.Equal(orig) {
		t.Fatalf("read: %v", err)
	}
	if got.Subject.CommonName != "kubernetes-admin" || strings.Join(got.Subject.Organization, ",") != "kubeadm:cluster-admins" {
		t.Errorf("subject %v", got.Subject)
	}

	renewed, err := RenewKubeconfigCert(&cfg.ClusterConfiguration, path, certDir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err = ReadKubeconfigClientCert(path)
	if err != nil || !got.Equal(renewed) || got.Equal(orig) || got.Subject.String() != orig.Subject.String() {
		t.Fatalf("after renewal: %v", err)
	}
	// The other fields are kept.
	b, _ := os.ReadFile(path)
	for _, want := range []string{"certificate-authority-data: ", "server: https://192.168.1.10:6443", "current-context: kubernetes-admin@kubernetes", "preferences: {}"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("renewed kubeconfig lacks %q:\n%s", want, b)
		}
	}
	if info, _ := os.Stat(path); info.Mode() != 0o600 {
		t.Errorf("mode %v", info.Mode())
	}

	if _, err := RenewKubeconfigCert(&cfg.ClusterConfiguration, filepath.Join(kdir, "none.conf"), certDir, testOptions(t)); !errors.Is(err, ErrMissing) {
		t.Errorf("missing: %v", err)
	}
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user:\n    client-certificate: /some/file\n"), 0o600)
	if _, err := ReadKubeconfigClientCert(path); err == nil || !strings.Contains(err.Error(), "no embedded client certificate") {
		t.Errorf("no embedded certificate: %v", err)
	}
}

func TestGenerateCSRs(t *testing.T) {
	cfg := testConfig(func(c *kubeadm.InitConfiguration) { c.ControlPlaneEndpoint = "lb.example.com:6443" })
	base := t.TempDir()
	certDir, kdir := filepath.Join(base, "pki"), filepath.Join(base, "k")
	if err := GenerateCSRs(t.Context(), cfg, certDir, kdir, testOptions(t), 2); err != nil {
		t.Fatal(err)
	}
	files := pkitest.Files(t, base)
	var want []string
	for _, p := range CSRTargets(certDir, kdir) {
		rel, _ := filepath.Rel(base, p)
		want = append(want, rel)
	}
	slices.Sort(want)
	if got := fileNames(files); !slices.Equal(got, want) || len(got) != 24 {
		t.Fatalf("files %v\nwant %v", got, want)
	}
	checkModes(t, certDir)

	csr := func(rel string) *x509.CertificateRequest {
		block, _ := pem.Decode([]byte(files[rel]))
		if block == nil || block.Type != "CERTIFICATE REQUEST" {
			t.Fatalf("%s: not a PEM request", rel)
		}
		r, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if err := r.CheckSignature(); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		return r
	}
	api := csr("pki/apiserver.csr")
	if api.Subject.CommonName != "kube-apiserver" || !slices.Contains(api.DNSNames, "lb.example.com") || len(api.IPAddresses) != 2 {
		t.Errorf("apiserver CSR %v %v %v", api.Subject, api.DNSNames, api.IPAddresses)
	}
	if r := csr("k/kubelet.conf.csr"); r.Subject.CommonName != "system:node:node1" || r.Subject.Organization[0] != "system:nodes" {
		t.Errorf("kubelet CSR %v", r.Subject)
	}
	for _, k := range []string{"admin.conf", "super-admin.conf", "kubelet.conf"} {
		if !strings.Contains(files["k/"+k], "server: https://lb.example.com:6443") {
			t.Errorf("%s: %s", k, files["k/"+k])
		}
	}
	for _, k := range []string{"controller-manager.conf", "scheduler.conf"} {
		if !strings.Contains(files["k/"+k], "server: https://192.168.1.10:6443") {
			t.Errorf("%s: %s", k, files["k/"+k])
		}
	}
	wantConf := "apiVersion: v1\nclusters:\n- cluster:\n    server: https://192.168.1.10:6443\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: system:kube-scheduler\n  name: system:kube-scheduler@kubernetes\ncurrent-context: system:kube-scheduler@kubernetes\nkind: Config\nusers:\n- name: system:kube-scheduler\n  user:\n    client-key-data: "
	if !strings.HasPrefix(files["k/scheduler.conf"], wantConf) {
		t.Errorf("scheduler.conf:\n%s", files["k/scheduler.conf"])
	}

	// Never overwrites: a second run fails before writing anything.
	if err := GenerateCSRs(t.Context(), cfg, certDir, kdir, testOptions(t), 2); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second run: %v", err)
	}
	os.Remove(filepath.Join(kdir, "scheduler.conf.csr"))
	if err := GenerateCSRs(t.Context(), cfg, certDir, kdir, testOptions(t), 2); err == nil {
		t.Error("a partly present set must be refused")
	}
	delete(files, "k/scheduler.conf.csr")
	if got := pkitest.Files(t, base); len(got) != len(files) {
		t.Error("a refused run wrote files")
	}
}

func TestCheckExpiration(t *testing.T) {
	cfg := testConfig()
	certDir := mustTree(t, cfg)
	kdir := t.TempDir()
	for _, k := range KubeconfigTable() {
		if k.File != "scheduler.conf" {
			writeKubeconfig(t, cfg, certDir, filepath.Join(kdir, k.File), k)
		}
	}
	os.Remove(CertPath(certDir, "etcd/peer"))
	fpKey, _ := os.ReadFile(KeyPath(certDir, "front-proxy-ca"))
	os.Remove(KeyPath(certDir, "front-proxy-ca"))

	certs, cas, err := CheckExpiration(&cfg.ClusterConfiguration, certDir, kdir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range append(certs, cas...) {
		lines = append(lines, strings.Join([]string{c.Name, c.CAName, yesNo(c.Missing), yesNo(c.ExternallyManaged), c.NotAfter.Format(time.DateOnly)}, " "))
	}
	want := []string{
		"admin.conf ca no no 2027-03-04",
		"apiserver ca no no 2027-03-04",
		"apiserver-etcd-client etcd-ca no no 2027-03-04",
		"apiserver-kubelet-client ca no no 2027-03-04",
		"controller-manager.conf ca no no 2027-03-04",
		"etcd-healthcheck-client etcd-ca no no 2027-03-04",
		"etcd-peer  yes no 0001-01-01",
		"etcd-server etcd-ca no no 2027-03-04",
		"front-proxy-client front-proxy-ca no yes 2027-03-04",
		"scheduler.conf  yes no 0001-01-01",
		"super-admin.conf ca no no 2027-03-04",
		"ca  no no 2036-03-01",
		"etcd-ca  no no 2036-03-01",
		"front-proxy-ca  no yes 2036-03-01",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// An external CA must come with what it signs.
	os.Remove(CertPath(certDir, "front-proxy-client"))
	if _, _, err := CheckExpiration(&cfg.ClusterConfiguration, certDir, kdir); err == nil || !strings.Contains(err.Error(), "front-proxy-client.crt") {
		t.Errorf("incomplete external CA: %v", err)
	}
	os.WriteFile(KeyPath(certDir, "front-proxy-ca"), fpKey, 0o600)
	// A missing CA certificate is reported as missing, as upstream does.
	os.Remove(CertPath(certDir, "etcd/ca"))
	_, cas, err = CheckExpiration(&cfg.ClusterConfiguration, certDir, kdir)
	if err != nil {
		t.Fatalf("missing CA: %v", err)
	}
	if i := slices.IndexFunc(cas, func(c ExpirationInfo) bool { return c.Name == "etcd-ca" }); i < 0 || !cas[i].Missing {
		t.Errorf("the missing etcd CA is not reported missing: %+v", cas)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
