package initphases

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

const hardenedGate = "featureGates:\n  CISHardening: true\n"

// fakeProgram writes an ELF executable header (with a PT_INTERP program
// header when dynamic) to a file and returns its path: enough for the
// static-link check and the copy.
func fakeProgram(t *testing.T, dynamic bool) string {
	t.Helper()
	var b bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Ehsize: 64, Phentsize: 56, Shentsize: 64,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	if dynamic {
		hdr.Phoff, hdr.Phnum = 64, 1
	}
	if err := binary.Write(&b, binary.LittleEndian, hdr); err != nil {
		t.Fatal(err)
	}
	if dynamic {
		if err := binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_INTERP)}); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "kubeadm")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// hardenedData is staticPodData with the CISHardening gate, its fixed
// paths under a folder of the test, the cluster's certificates made, and
// a fake static kubeadm program.
func hardenedData(t *testing.T) (*Data, *bytes.Buffer) {
	t.Helper()
	d, out := staticPodData(t, hardenedGate)
	d.HardeningRoot = t.TempDir()
	d.Executable = fakeProgram(t, false)
	if _, _, err := pki.EnsureAll(context.Background(), d.Cfg, d.CertDir, pki.Options{}, 2); err != nil {
		t.Fatal(err)
	}
	return d, out
}

func ownerMode(t *testing.T, p string) (uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid, fi.Mode().Perm()
}

// TestHardenedPhases runs the etcd and control-plane phases with the
// CISHardening gate: certificates 0600, etcd as the etcd user owning its
// data and files, the API server's files, and the approver's kubeconfig,
// program and manifest; a second run changes nothing.
func TestHardenedPhases(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root")
	}
	d, _ := hardenedData(t)
	for _, c := range pki.CertTable() {
		if _, mode := ownerMode(t, pki.CertPath(d.CertDir, c.BaseName)); mode != 0o600 {
			t.Errorf("%s.crt has mode %v", c.BaseName, mode)
		}
	}
	ctx := context.Background()
	run := func() {
		t.Helper()
		if err := findPhase(t, EtcdPhase().Phases, "local").Run(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := workflow.RunTree(ctx, ControlPlanePhase(), d, nil); err != nil {
			t.Fatal(err)
		}
	}
	run()
	manifests := treeOf(t, d.ManifestDir)
	binary := hostPath(d, cis.ApproverBinary)
	binInode := inodeOf(t, binary)
	run()
	if again := treeOf(t, d.ManifestDir); again != manifests {
		t.Error("a second run changed the manifests")
	}
	if inodeOf(t, binary) != binInode {
		t.Error("a second run copied the approver's program again")
	}

	passwd, _ := os.ReadFile(filepath.Join(d.EtcDir, "passwd"))
	if !strings.Contains(string(passwd), "etcd:x:100:100:"+cis.EtcdUserComment+"::/bin/false\n") {
		t.Errorf("passwd:\n%s", passwd)
	}
	if uid, mode := ownerMode(t, d.Cfg.Etcd.Local.DataDir); uid != 100 || mode != 0o700 {
		t.Errorf("etcd data folder: owner %d, mode %v", uid, mode)
	}
	for _, f := range etcdTLSFiles(d.CertDir) {
		if uid, mode := ownerMode(t, f); uid != 100 || mode != 0o600 {
			t.Errorf("%s: owner %d, mode %v", f, uid, mode)
		}
	}
	if uid, _ := ownerMode(t, pki.KeyPath(d.CertDir, "etcd/healthcheck-client")); uid != 0 {
		t.Errorf("a file etcd does not read went to etcd")
	}
	mustContain(t, filepath.Join(d.ManifestDir, "etcd.yaml"), "runAsUser: 100", "runAsGroup: 100", "allowPrivilegeEscalation: false")
	mustContain(t, filepath.Join(d.ManifestDir, "kube-apiserver.yaml"), "--profiling=false", "--audit-policy-file=/etc/kubernetes/audit-policy.yaml",
		"--kubelet-certificate-authority="+filepath.Join(d.CertDir, "ca.crt"), "EventRateLimit")
	mustContain(t, filepath.Join(d.ManifestDir, "kube-controller-manager.yaml"), "--profiling=false", "--terminated-pod-gc-threshold=1000")
	mustContain(t, filepath.Join(d.ManifestDir, "kube-scheduler.yaml"), "--profiling=false")

	for path, want := range map[string][]byte{cis.AuditPolicyFile: cis.AuditPolicy(), cis.AdmissionConfigFile: cis.AdmissionConfig()} {
		got, err := os.ReadFile(hostPath(d, path))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v", path, err)
		}
		if _, mode := ownerMode(t, hostPath(d, path)); mode != 0o600 {
			t.Errorf("%s has mode %v", path, mode)
		}
	}
	if _, mode := ownerMode(t, hostPath(d, cis.AuditLogDir)); mode != 0o700 {
		t.Errorf("audit log folder mode %v", mode)
	}

	// The approver: its program, its kubeconfig, its manifest.
	prog, _ := os.ReadFile(d.Executable)
	copied, _ := os.ReadFile(binary)
	if !bytes.Equal(prog, copied) {
		t.Error("the approver's program is not a copy of kubeadm")
	}
	sum := sha256.Sum256(prog)
	mustContain(t, staticpod.ManifestPath(d.ManifestDir, staticpod.KubeletServingApprover),
		staticpod.AnnotationApproverBinary+": "+hex.EncodeToString(sum[:]),
		"- "+cis.ApproverBinary, "- kubelet-serving-approver", "readOnlyRootFilesystem: true")
	kc, err := kubeconfig.Load(cis.ApproverKubeconfig(d.KubeconfigDir))
	if err != nil {
		t.Fatal(err)
	}
	if got := kc.Contexts[kc.CurrentContext].AuthInfo; got != "kubeadm:kubelet-serving-approver" {
		t.Errorf("the approver's kubeconfig is for %q", got)
	}
}

// TestHardenedApproverNeedsStaticKubeadm: a dynamically linked kubeadm
// cannot run in the pause image; the error says so and nothing is copied.
func TestHardenedApproverNeedsStaticKubeadm(t *testing.T) {
	d, _ := hardenedData(t)
	d.Executable = fakeProgram(t, true)
	err := EnsureKubeletServingApprover(d, false)
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(hostPath(d, cis.ApproverBinary)); !os.IsNotExist(err) {
		t.Errorf("the program was copied: %v", err)
	}
}

// TestHardenedDryRun: a dry run prints the profile's files and touches
// nothing of the node.
func TestHardenedDryRun(t *testing.T) {
	d, out := hardenedData(t)
	d.DryRun = true
	if err := findPhase(t, EtcdPhase().Phases, "local").Run(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if err := workflow.RunTree(context.Background(), ControlPlanePhase(), d, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Would make sure the user and group "etcd" exist`,
		`Would write file "/etc/kubernetes/audit-policy.yaml", unless it exists, with content:`,
		"\tkind: Policy\n",
		`Would create the folder "/var/log/kubernetes/audit"`,
		`Would copy "` + d.Executable + `" to "/var/lib/kubeadm/kubeadm"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(d.HardeningRoot); len(entries) > 0 {
		t.Errorf("the dry run wrote %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(d.EtcDir, "passwd")); strings.Contains(string(b), "etcd") {
		t.Error("the dry run added the etcd user")
	}
}

func mustContain(t *testing.T, path string, wants ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wants {
		if !bytes.Contains(data, []byte(w)) {
			t.Errorf("%s lacks %q:\n%s", filepath.Base(path), w, data)
		}
	}
}

// treeOf is the names, inodes and contents of a folder's files, to tell
// whether anything was rewritten.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %d %s\n", e.Name(), inodeOf(t, p), data)
	}
	return b.String()
}

// TestApproverKubeconfigMoved: the approver's kubeconfig an older kubeadm
// wrote directly in the kubeconfig folder is moved into its own folder,
// credential kept, and nothing is moved once a file is there.
func TestApproverKubeconfigMoved(t *testing.T) {
	dir := t.TempDir()
	legacy, path := cis.LegacyApproverKubeconfig(dir), cis.ApproverKubeconfig(dir)
	if err := os.WriteFile(legacy, []byte("credential"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := moveLegacyApproverKubeconfig(dir); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "credential" {
		t.Errorf("moved file: %q %v", got, err)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Errorf("the old file is left: %v", err)
	}
	if err := os.WriteFile(legacy, []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := moveLegacyApproverKubeconfig(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "credential" {
		t.Errorf("a file in the folder was replaced by the old one: %q", got)
	}
}
