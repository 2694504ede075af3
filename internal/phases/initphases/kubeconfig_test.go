package initphases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// kubeconfigData returns phase data with an ECDSA cluster CA in a temporary
// certificate folder and an empty kubeconfig folder next to it.
func kubeconfigData(t *testing.T) (*Data, *bytes.Buffer) {
	t.Helper()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	root := t.TempDir()
	certDir := filepath.Join(root, "pki")
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", Validity: 24 * time.Hour}, key, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteCertAndKey(certDir, "ca", ca, key); err != nil {
		t.Fatal(err)
	}
	cfg := &kubeadm.InitConfiguration{}
	cfg.ClusterName = "kubernetes"
	cfg.CertificatesDir = certDir
	cfg.ControlPlaneEndpoint = "lb.example.com"
	cfg.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256
	cfg.CertificateValidityPeriod = &metav1.Duration{Duration: 2 * time.Hour}
	cfg.LocalAPIEndpoint = kubeadm.APIEndpoint{AdvertiseAddress: "192.168.1.10", BindPort: 6443}
	cfg.NodeRegistration.Name = "node1"
	out := &bytes.Buffer{}
	return &Data{
		Cfg:           configtest.Parse(cfg),
		CertDir:       certDir,
		KubeconfigDir: filepath.Join(root, "kubernetes"),
		Out:           out,
		Now:           func() time.Time { return now },
	}, out
}

// runKubeconfig runs the kubeconfig phase group as "init" (or "init phase
// kubeconfig all") does.
func runKubeconfig(d *Data, phase workflow.Phase[*Data]) error {
	r := &workflow.Runner[*Data]{
		Phases:  []workflow.Phase[*Data]{phase},
		NewData: func(*cobra.Command, []string) (*Data, error) { return d, nil },
	}
	return r.Run(context.Background(), nil)
}

func kubeconfigSubPhase(t *testing.T, p workflow.Phase[*Data], name string) workflow.Phase[*Data] {
	t.Helper()
	for _, s := range p.Phases {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no sub-phase %q", name)
	return workflow.Phase[*Data]{}
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

func TestKubeconfigPhaseAll(t *testing.T) {
	d, out := kubeconfigData(t)
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	want := `[kubeconfig] Using kubeconfig folder "` + d.KubeconfigDir + `"
[kubeconfig] Writing "admin.conf" kubeconfig file
[kubeconfig] Writing "super-admin.conf" kubeconfig file
[kubeconfig] Writing "kubelet.conf" kubeconfig file
[kubeconfig] Writing "controller-manager.conf" kubeconfig file
[kubeconfig] Writing "scheduler.conf" kubeconfig file
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	expect := map[string]struct{ cn, org, server string }{
		"admin.conf":              {"kubernetes-admin", "kubeadm:cluster-admins", "https://lb.example.com:6443"},
		"super-admin.conf":        {"kubernetes-super-admin", "system:masters", "https://lb.example.com:6443"},
		"kubelet.conf":            {"system:node:node1", "system:nodes", "https://192.168.1.10:6443"},
		"controller-manager.conf": {"system:kube-controller-manager", "", "https://192.168.1.10:6443"},
		"scheduler.conf":          {"system:kube-scheduler", "", "https://192.168.1.10:6443"},
	}
	ca, err := pki.LoadCert(pki.CertPath(d.CertDir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range expect {
		path := filepath.Join(d.KubeconfigDir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o", name, st.Mode().Perm())
		}
		cert, err := kubeconfig.ClientCertificateOf(path)
		if err != nil {
			t.Fatal(err)
		}
		org := strings.Join(cert.Subject.Organization, ",")
		if cert.Subject.CommonName != e.cn || org != e.org {
			t.Errorf("%s: CN=%s O=%s, want CN=%s O=%s", name, cert.Subject.CommonName, org, e.cn, e.org)
		}
		if err := cert.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s: not signed by the cluster CA: %v", name, err)
		}
		if want := d.Now().Add(2 * time.Hour); !cert.NotAfter.Equal(want) {
			t.Errorf("%s: ends %s, want %s", name, cert.NotAfter, want)
		}
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.Clusters["kubernetes"].Server; s != e.server {
			t.Errorf("%s: server %s, want %s", name, s, e.server)
		}
	}

	// A second run keeps every file.
	before := readAll(t, d.KubeconfigDir)
	out.Reset()
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	want = `[kubeconfig] Using kubeconfig folder "` + d.KubeconfigDir + `"` + "\n"
	for _, f := range kubeconfig.ControlPlaneFiles() {
		want += `[kubeconfig] Using existing kubeconfig file: "` + filepath.Join(d.KubeconfigDir, f) + `"` + "\n"
	}
	if out.String() != want {
		t.Errorf("second run:\n%s\nwant:\n%s", out, want)
	}
	after := readAll(t, d.KubeconfigDir)
	if len(after) != len(before) {
		t.Fatalf("%d files, then %d", len(before), len(after))
	}
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Errorf("%s changed on the second run", name)
		}
	}
}

func TestKubeconfigPhaseRecreatesMissing(t *testing.T) {
	d, out := kubeconfigData(t)
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d.KubeconfigDir, "scheduler.conf")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `Writing "scheduler.conf"`) || strings.Count(out.String(), "Using existing") != 4 {
		t.Errorf("output:\n%s", out)
	}
}

func TestKubeconfigPhaseCAMismatch(t *testing.T) {
	d, _ := kubeconfigData(t)
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	// A new cluster CA: the existing files no longer trust it.
	other, _ := kubeconfigData(t)
	d.CertDir = other.CertDir
	err := runKubeconfig(d, KubeconfigPhase())
	admin := filepath.Join(d.KubeconfigDir, "admin.conf")
	if err == nil || !strings.Contains(err.Error(), "kubeconfig/admin") || !strings.Contains(err.Error(), admin) {
		t.Fatalf("error %v, want one naming the phase and %s", err, admin)
	}
}

func TestKubeconfigSubPhaseAlone(t *testing.T) {
	d, out := kubeconfigData(t)
	p := KubeconfigPhase()
	if err := kubeconfigSubPhase(t, p, "kubelet").Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if out.String() != "[kubeconfig] Writing \"kubelet.conf\" kubeconfig file\n" {
		t.Errorf("output %q", out)
	}
	if files := readAll(t, d.KubeconfigDir); len(files) != 1 || files["kubelet.conf"] == nil {
		t.Errorf("files %v", files)
	}
}

func TestKubeconfigPhaseDirFlag(t *testing.T) {
	d, out := kubeconfigData(t)
	p := KubeconfigPhase()
	admin := kubeconfigSubPhase(t, p, "admin")
	dir := filepath.Join(t.TempDir(), "elsewhere")
	if err := admin.LocalFlags.Set(KubeconfigDirFlag, dir); err != nil {
		t.Fatal(err)
	}
	if err := admin.Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.conf")); err != nil {
		t.Errorf("admin.conf not in --kubeconfig-dir: %v (output %q)", err, out)
	}
	if _, err := os.Stat(d.KubeconfigDir); err == nil {
		t.Error("the default folder was written to")
	}
	// A dry run keeps writing into its own folder.
	d.DryRun = true
	if err := kubeconfigSubPhase(t, p, "scheduler").Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.KubeconfigDir, "scheduler.conf")); err != nil {
		t.Errorf("dry run: %v", err)
	}
}

func TestKubeconfigPhaseExternalCA(t *testing.T) {
	d, out := kubeconfigData(t)
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pki.KeyPath(d.CertDir, "ca")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runKubeconfig(d, KubeconfigPhase()); err != nil {
		t.Fatal(err)
	}
	want := `[kubeconfig] Using kubeconfig folder "` + d.KubeconfigDir + `"` + "\n"
	for _, f := range kubeconfig.ControlPlaneFiles() {
		want += "[kubeconfig] External CA mode: Using user provided " + f + "\n"
	}
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	missing := filepath.Join(d.KubeconfigDir, "controller-manager.conf")
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := runKubeconfig(d, KubeconfigPhase())
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("error %v, want one naming %s", err, missing)
	}
	if out.Len() != 0 {
		t.Errorf("output before the check failed: %q", out)
	}
	if err := CheckExternalCAKubeconfigs(d, d.KubeconfigDir); err == nil {
		t.Error("CheckExternalCAKubeconfigs must fail too")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a file was created without the CA key")
	}
}

func TestKubeconfigPhaseNoCA(t *testing.T) {
	d, out := kubeconfigData(t)
	d.CertDir = t.TempDir()
	err := runKubeconfig(d, KubeconfigPhase())
	if err == nil || !strings.Contains(err.Error(), "kubeconfig/admin") || !strings.Contains(err.Error(), "ca.crt") {
		t.Fatalf("error %v", err)
	}
	if !strings.HasPrefix(out.String(), "[kubeconfig] Using kubeconfig folder") {
		t.Errorf("output %q", out)
	}
	if err := CheckExternalCAKubeconfigs(d, d.KubeconfigDir); err != nil {
		t.Errorf("without a CA the check leaves the error to the phases: %v", err)
	}
}

func TestKubeconfigPhasePreparesKeys(t *testing.T) {
	d, _ := kubeconfigData(t)
	// One file is there already: no key is made for it.
	kept := kubeconfig.ControlPlaneFiles()[0]
	if err := os.MkdirAll(d.KubeconfigDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.KubeconfigDir, kept), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := &preparedKeys{}
	keys.start(context.Background(), d, d.KubeconfigDir, nil)
	for _, f := range kubeconfig.ControlPlaneFiles() {
		key, err := keys.take(d, f)
		if err != nil {
			t.Fatal(err)
		}
		if (key == nil) != (f == kept) {
			t.Errorf("key prepared for %s: %v", f, key != nil)
		}
		if again, _ := keys.take(d, f); again != nil {
			t.Errorf("the key of %s was handed out twice", f)
		}
	}
	other, _ := kubeconfigData(t)
	if key, _ := keys.take(other, kubeconfig.ControlPlaneFiles()[1]); key != nil {
		t.Error("a key prepared for one run was handed to another")
	}
}

func TestKubeconfigPhaseTree(t *testing.T) {
	p := KubeconfigPhase()
	if p.Name != "kubeconfig" || p.Run == nil || len(p.InheritFlags) != 0 || p.LocalFlags != nil {
		t.Errorf("group: %+v", p)
	}
	var names []string
	base := "config,cert-dir,kubernetes-version,apiserver-advertise-address,apiserver-bind-port,control-plane-endpoint,dry-run"
	for _, s := range p.Phases {
		names = append(names, s.Name)
		want := base
		if s.Name == "all" || s.Name == "kubelet" {
			want += ",node-name"
		}
		if got := strings.Join(s.InheritFlags, ","); got != want {
			t.Errorf("%s inherits %s, want %s", s.Name, got, want)
		}
		if s.LocalFlags == nil || s.LocalFlags.Lookup(KubeconfigDirFlag) == nil {
			t.Errorf("%s has no --%s", s.Name, KubeconfigDirFlag)
		}
		if s.Short == "" {
			t.Errorf("%s: no Short", s.Name)
		}
	}
	if got := strings.Join(names, " "); got != "all admin super-admin kubelet controller-manager scheduler" {
		t.Errorf("sub-phases %s", got)
	}
	if !p.Phases[0].RunAllSiblings {
		t.Error("all must run its siblings")
	}
}
