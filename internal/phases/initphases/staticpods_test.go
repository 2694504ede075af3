package initphases

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

const staticPodTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

// staticPodData returns phase data writing under a temporary folder, from
// the test configuration with extra appended to the ClusterConfiguration.
func staticPodData(t *testing.T, extra string) (*Data, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	cfg := configtest.InitConfiguration(t, staticPodTestConfig+extra, "10.0.0.5")
	cfg.CertificatesDir = filepath.Join(root, "pki")
	if cfg.Etcd.Local != nil {
		cfg.Etcd.Local.DataDir = filepath.Join(root, "var", "lib", "etcd")
	}
	// Account files of its own: the RootlessControlPlane gate adds users.
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"passwd": "root:x:0:0:root:/root:/bin/bash\n", "group": "root:x:0:\n"} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := &bytes.Buffer{}
	return &Data{
		Cfg:           cfg,
		EtcDir:        etc,
		CertDir:       cfg.CertificatesDir,
		KubeconfigDir: root,
		ManifestDir:   filepath.Join(root, "manifests"),
		KubeletDir:    filepath.Join(root, "kubelet"),
		Out:           out,
		Now:           time.Now,
	}, out
}

func findPhase(t *testing.T, phases []workflow.Phase[*Data], name string) workflow.Phase[*Data] {
	t.Helper()
	for _, p := range phases {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no phase %q", name)
	return workflow.Phase[*Data]{}
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestEtcdLocalPhase(t *testing.T) {
	d, out := staticPodData(t, "")
	local := findPhase(t, EtcdPhase().Phases, "local")
	for i := range 2 {
		out.Reset()
		if err := local.Run(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		want := "[etcd] Creating static Pod manifest for local etcd in \"" + d.ManifestDir + "\"\n"
		if out.String() != want {
			t.Errorf("run %d: output %q, want %q", i+1, out.String(), want)
		}
	}
	fi, err := os.Stat(d.Cfg.Etcd.Local.DataDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("etcd data folder: %v, %v", fi, err)
	}
	data, err := os.ReadFile(filepath.Join(d.ManifestDir, "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("--initial-cluster=node1=https://10.0.0.5:2380")) {
		t.Errorf("unexpected manifest:\n%s", data)
	}
}

func TestEtcdLocalPhaseDryRun(t *testing.T) {
	d, out := staticPodData(t, "")
	d.DryRun = true
	if err := findPhase(t, EtcdPhase().Phases, "local").Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Cfg.Etcd.Local.DataDir); !os.IsNotExist(err) {
		t.Errorf("dry run created the data folder: %v", err)
	}
	if !strings.HasPrefix(out.String(), "[etcd] Would ensure that \""+d.Cfg.Etcd.Local.DataDir+"\" directory is present\n") {
		t.Errorf("output %q", out.String())
	}
}

func TestEtcdLocalPhaseExternal(t *testing.T) {
	d, out := staticPodData(t, "etcd:\n  external:\n    endpoints: [\"https://10.1.0.1:2379\"]\n")
	if err := findPhase(t, EtcdPhase().Phases, "local").Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("output %q", out.String())
	}
	if _, err := os.Stat(d.ManifestDir); !os.IsNotExist(err) {
		t.Errorf("manifest folder created for external etcd: %v", err)
	}
}

func TestControlPlanePhases(t *testing.T) {
	d, out := staticPodData(t, "")
	d.PatchesDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(d.PatchesDir, "kube-scheduler+merge.yaml"), []byte("metadata: {annotations: {patched: \"yes\"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := ControlPlanePhase()
	run := func() {
		t.Helper()
		out.Reset()
		if err := cp.Run(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"apiserver", "controller-manager", "scheduler"} {
			if err := findPhase(t, cp.Phases, name).Run(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	for _, want := range []string{
		"[control-plane] Using manifest folder \"" + d.ManifestDir + "\"\n[control-plane] Creating static Pod manifest for \"kube-apiserver\"\n",
		"[control-plane] Creating static Pod manifest for \"kube-controller-manager\"\n",
		"[control-plane] Creating static Pod manifest for \"kube-scheduler\"\n",
		"[patches] Applied patch of type \"application/merge-patch+json\" to target \"kube-scheduler\"\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	inodes := map[string]uint64{}
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		p := filepath.Join(d.ManifestDir, c+".yaml")
		inodes[p] = inodeOf(t, p)
	}
	sched, _ := os.ReadFile(filepath.Join(d.ManifestDir, "kube-scheduler.yaml"))
	if !bytes.Contains(sched, []byte("patched: \"yes\"")) {
		t.Errorf("patch not applied:\n%s", sched)
	}
	// A second run converges without touching the files.
	run()
	for p, ino := range inodes {
		if inodeOf(t, p) != ino {
			t.Errorf("%s was rewritten with the same content", p)
		}
	}
	if all := findPhase(t, cp.Phases, "all"); !all.RunAllSiblings || all.Run != nil {
		t.Error(`"all" must run its siblings`)
	}
}

func TestControlPlaneExternalCA(t *testing.T) {
	d, _ := staticPodData(t, "")
	if err := os.MkdirAll(d.CertDir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.CertDir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := findPhase(t, ControlPlanePhase().Phases, "controller-manager")
	if err := cm.Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(d.ManifestDir, "kube-controller-manager.yaml"))
	if !bytes.Contains(data, []byte("- --cluster-signing-cert-file=\n")) || !bytes.Contains(data, []byte("- --cluster-signing-key-file=\n")) {
		t.Errorf("external CA not detected:\n%s", data)
	}
	// With the key present the controller manager signs again.
	if err := os.WriteFile(filepath.Join(d.CertDir, "ca.key"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cm.Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(d.ManifestDir, "kube-controller-manager.yaml"))
	if !bytes.Contains(data, []byte("- --cluster-signing-key-file="+filepath.Join(d.CertDir, "ca.key")+"\n")) {
		t.Errorf("signing flags not restored:\n%s", data)
	}
}

func TestStaticPodPhasesRootless(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root")
	}
	d, out := staticPodData(t, "featureGates:\n  RootlessControlPlane: true\n")
	etcdPhase := findPhase(t, EtcdPhase().Phases, "local")
	// etcd's keys are not there yet: the error names the file.
	if err := etcdPhase.Run(context.Background(), d); err == nil || !strings.Contains(err.Error(), "server.key") {
		t.Fatalf("etcd without its keys: %v", err)
	}
	for _, f := range []string{"etcd/server.key", "etcd/peer.key"} {
		p := filepath.Join(d.CertDir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := etcdPhase.Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(d.ManifestDir, "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"runAsUser: 100", "runAsGroup: 100", "allowPrivilegeEscalation: false", "- ALL"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("etcd manifest lacks %q:\n%s", want, data)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(d.CertDir, "etcd/server.key"), &st); err != nil || st.Uid != 100 {
		t.Errorf("etcd's key belongs to %d (%v)", st.Uid, err)
	}

	// A dry run only says what it would do.
	d2, _ := staticPodData(t, "featureGates:\n  RootlessControlPlane: true\n")
	d2.DryRun, d2.Out = true, out
	out.Reset()
	if err := findPhase(t, ControlPlanePhase().Phases, "scheduler").Run(context.Background(), d2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[control-plane] Would create the users and groups kube-scheduler runs as instead of root") {
		t.Errorf("output %q", out.String())
	}
	if b, _ := os.ReadFile(filepath.Join(d2.EtcDir, "passwd")); strings.Contains(string(b), "kubeadm") {
		t.Error("a dry run added users")
	}
}

func TestStaticPodPhasePatchErrors(t *testing.T) {
	d, _ := staticPodData(t, "")
	d.PatchesDir = filepath.Join(t.TempDir(), "missing")
	if err := findPhase(t, ControlPlanePhase().Phases, "scheduler").Run(context.Background(), d); err == nil {
		t.Error("missing patches folder accepted")
	}
	if _, err := os.Stat(filepath.Join(d.ManifestDir, "kube-scheduler.yaml")); !os.IsNotExist(err) {
		t.Errorf("manifest written despite the error: %v", err)
	}
}

// With NodeLocalAPILoadBalancer the API server's phase also writes the
// balancer's static Pod, preferring this node's API server; without it,
// nothing more. (Under --dry-run, so no binary is copied to the real
// /var/lib/kubeadm.)
func TestAPIServerPhaseWritesTheBalancerWithTheGate(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run("gate "+map[bool]string{false: "off", true: "on"}[gate], func(t *testing.T) {
			extra := ""
			if gate {
				extra = "featureGates:\n  NodeLocalAPILoadBalancer: true\n"
			}
			d, _ := staticPodData(t, extra)
			d.DryRun, d.DryRunDir = true, t.TempDir()
			if err := runControlPlaneComponent(context.Background(), d, "kube-apiserver"); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(d.ManifestDir, "kube-apiserver-lb.yaml"))
			if !gate {
				if err == nil {
					t.Fatal("the balancer's manifest was written with the gate off")
				}
				return
			}
			if err != nil {
				t.Fatalf("no balancer manifest with the gate on: %v", err)
			}
			for _, want := range []string{"--prefer=10.0.0.5:6443", "--listen=127.0.0.1:7445", "image: registry.k8s.io/pause:"} {
				if !strings.Contains(string(data), want) {
					t.Errorf("the manifest lacks %q:\n%s", want, data)
				}
			}
		})
	}
}
