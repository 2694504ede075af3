package initphases

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// certsTestConfig uses ECDSA keys, which are quick to make.
const certsTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.168.1.10
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
encryptionAlgorithm: ECDSA-P256
`

// certsData returns phase data writing certificates under a temporary
// folder, from certsTestConfig with extra appended.
func certsData(t *testing.T, extra string) (*Data, *bytes.Buffer) {
	t.Helper()
	cfg := configtest.InitConfiguration(t, certsTestConfig+extra, "192.168.1.10")
	out := &bytes.Buffer{}
	root := t.TempDir()
	return &Data{
		Cfg:     cfg,
		CertDir: filepath.Join(root, "pki"),
		Out:     out,
		Now:     func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) },
	}, out
}

// runCerts runs the certs phase group as "init" (or "init phase certs
// all") does, skipping the given phases.
func runCerts(t *testing.T, d *Data, skip ...string) error {
	t.Helper()
	r := &workflow.Runner[*Data]{
		Phases:     []workflow.Phase[*Data]{CertsPhase()},
		NewData:    func(*cobra.Command, []string) (*Data, error) { return d, nil },
		SkipPhases: func(*Data) []string { return skip },
	}
	return r.Run(context.Background(), nil)
}

// runCertsSubPhase runs one sub-phase alone, as "init phase certs <name>".
func runCertsSubPhase(t *testing.T, d *Data, name string) error {
	t.Helper()
	for _, p := range CertsPhase().Phases {
		if p.Name == name {
			return p.Run(context.Background(), d)
		}
	}
	t.Fatalf("no sub-phase %q", name)
	return nil
}

func TestCertsPhaseAll(t *testing.T) {
	d, out := certsData(t, "")
	if err := runCerts(t, d); err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(readGolden(t, "certs-all.golden"), "CERTDIR", d.CertDir)
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	files := pkitest.Files(t, d.CertDir)
	if len(files) != 22 {
		t.Errorf("%d files", len(files))
	}

	// Again: everything is reused, nothing changes.
	out.Reset()
	if err := runCerts(t, d); err != nil {
		t.Fatal(err)
	}
	want = strings.ReplaceAll(readGolden(t, "certs-all-again.golden"), "CERTDIR", d.CertDir)
	if out.String() != want {
		t.Errorf("second run:\n%s\nwant:\n%s", out, want)
	}
	if !maps.Equal(files, pkitest.Files(t, d.CertDir)) {
		t.Error("a second run changed files")
	}

	// External CA mode.
	os.Remove(pki.KeyPath(d.CertDir, "ca"))
	out.Reset()
	if err := runCerts(t, d); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"[certs] Using existing ca keyless certificate authority\n", "[certs] Using existing sa keys\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("external CA: no %q in\n%s", line, out)
		}
	}
	os.Remove(pki.CertPath(d.CertDir, "apiserver-kubelet-client"))
	err := runCerts(t, d)
	if err == nil || !strings.Contains(err.Error(), "certs/apiserver-kubelet-client") ||
		!strings.Contains(err.Error(), pki.CertPath(d.CertDir, "apiserver-kubelet-client")) {
		t.Errorf("external CA, missing leaf: %v", err)
	}
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCertsPhaseExternalEtcd(t *testing.T) {
	d, out := certsData(t, `etcd:
  external:
    endpoints: ["https://10.0.0.5:2379"]
    caFile: /etc/kubernetes/pki/etcd/ca.crt
    certFile: /etc/kubernetes/pki/apiserver-etcd-client.crt
    keyFile: /etc/kubernetes/pki/apiserver-etcd-client.key
`)
	if err := runCerts(t, d); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"[certs] External etcd mode: Skipping etcd/ca certificate authority generation",
		"[certs] External etcd mode: Skipping etcd/server certificate generation",
		"[certs] External etcd mode: Skipping apiserver-etcd-client certificate generation",
	} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("no %q in\n%s", line, out)
		}
	}
	var names []string
	for n := range pkitest.Files(t, d.CertDir) {
		names = append(names, n)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); strings.Contains(got, "etcd") || len(names) != 12 {
		t.Errorf("files %s", got)
	}
}

func TestCertsSubPhases(t *testing.T) {
	d, out := certsData(t, "")
	// A leaf alone needs its CA on disk, as with kubeadm.
	err := runCertsSubPhase(t, d, "apiserver")
	if err == nil || !strings.Contains(err.Error(), pki.CertPath(d.CertDir, "ca")) {
		t.Fatalf("without CA: %v", err)
	}
	for _, name := range []string{"ca", "apiserver", "apiserver", "sa"} {
		if err := runCertsSubPhase(t, d, name); err != nil {
			t.Fatal(err)
		}
	}
	want := `[certs] Generating "ca" certificate and key
[certs] Generating "apiserver" certificate and key
[certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local node1] and IPs [10.96.0.1 192.168.1.10]
[certs] Using existing apiserver certificate and key on disk
[certs] Generating "sa" key and public key
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	var names []string
	for n := range pkitest.Files(t, d.CertDir) {
		names = append(names, n)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "apiserver.crt apiserver.key ca.crt ca.key sa.key sa.pub" {
		t.Errorf("files %s", got)
	}
}

func TestCertsPhaseSkip(t *testing.T) {
	d, out := certsData(t, "")
	if err := runCerts(t, d, "certs/apiserver", "certs/sa"); err != nil {
		t.Fatal(err)
	}
	files := pkitest.Files(t, d.CertDir)
	for _, f := range []string{"apiserver.crt", "apiserver.key", "sa.key"} {
		if _, ok := files[f]; ok {
			t.Errorf("skipped %s was written", f)
		}
	}
	if len(files) != 18 || strings.Contains(out.String(), `"apiserver"`) {
		t.Errorf("%d files; output:\n%s", len(files), out)
	}
}

// TestCertsPhaseDryRun: under --dry-run the init command points CertDir
// into the dry-run folder; the phase writes there and nowhere else.
func TestCertsPhaseDryRun(t *testing.T) {
	d, _ := certsData(t, "")
	root := t.TempDir()
	d.DryRun = true
	d.DryRunDir = filepath.Join(root, "dry")
	d.CertDir = filepath.Join(d.DryRunDir, "pki")
	d.Cfg.CertificatesDir = filepath.Join(root, "real", "pki")
	if err := runCerts(t, d); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "dry" {
		t.Errorf("wrote outside the dry-run folder: %v", entries)
	}
	if n := len(pkitest.Files(t, d.CertDir)); n != 22 {
		t.Errorf("%d files in the dry-run folder", n)
	}
}

func TestCertsPhaseTree(t *testing.T) {
	p := CertsPhase()
	var names []string
	for _, s := range p.Phases {
		names = append(names, s.Name)
		if s.Short == "" {
			t.Errorf("%s: no Short", s.Name)
		}
		flags := strings.Join(s.InheritFlags, ",")
		want := "cert-dir,config,dry-run,kubernetes-version"
		if s.Name == "all" || s.Name == "apiserver" {
			want = "apiserver-advertise-address,apiserver-cert-extra-sans,cert-dir,config,control-plane-endpoint,dry-run,kubernetes-version,service-cidr,service-dns-domain"
		}
		if flags != want {
			t.Errorf("%s inherits %s, want %s", s.Name, flags, want)
		}
	}
	want := "all ca apiserver apiserver-kubelet-client front-proxy-ca front-proxy-client etcd-ca etcd-server etcd-peer etcd-healthcheck-client apiserver-etcd-client sa"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("sub-phases %s\nwant %s", got, want)
	}
}
