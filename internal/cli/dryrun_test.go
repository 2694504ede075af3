package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot lists the paths under the given roots (missing roots list as
// absent), so a test can tell whether anything changed there.
func snapshot(t *testing.T, roots ...string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, e fs.DirEntry, err error) error {
			if err == nil {
				seen[p] = true
			}
			return nil
		})
	}
	return seen
}

// TestInitDryRunWritesOnlyIntoItsFolder runs every local init phase with
// --dry-run and checks that the files land in the dry-run folder and that
// the real folders are left exactly as they were.
func TestInitDryRunWritesOnlyIntoItsFolder(t *testing.T) {
	dryRoot := t.TempDir()
	t.Setenv(initDryRunDirEnv, dryRoot)
	real := []string{"/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd"}
	before := snapshot(t, real...)

	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.0.2.10
nodeRegistration:
  name: dry-node
  criSocket: unix:///run/none.sock
skipPhases:
- preflight
- wait-control-plane
- upload-config
- upload-certs
- mark-control-plane
- bootstrap-token
- kubelet-finalize
- addon
- show-join-command
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
encryptionAlgorithm: ECDSA-P256
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "init", "--config", cfg, "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	after := snapshot(t, real...)
	for p := range after {
		if !before[p] {
			t.Errorf("dry run created %s outside its folder", p)
		}
	}
	for p := range before {
		if !after[p] {
			t.Errorf("dry run removed %s", p)
		}
	}
	written := snapshot(t, dryRoot)
	for _, want := range []string{"pki/ca.crt", "pki/etcd/ca.key", "admin.conf", "manifests/kube-apiserver.yaml", "manifests/etcd.yaml", "kubelet/config.yaml"} {
		found := false
		for p := range written {
			if strings.HasSuffix(p, "/"+want) {
				found = true
			}
		}
		if !found {
			t.Errorf("dry run did not write %s into its folder", want)
		}
	}
	if !strings.Contains(out, `Would write file "/etc/kubernetes/manifests/kube-apiserver.yaml"`) {
		t.Errorf("dry run output does not show the manifest under its real path:\n%s", out)
	}
	if strings.Contains(out, "PRIVATE KEY") {
		t.Error("dry run printed key material")
	}
}

// TestMakeDryRunDir: init and join honour their own environment variable
// (KUBEADM_INIT_DRYRUN_DIR, KUBEADM_JOIN_DRYRUN_DIR), else use the system's
// temporary folder.
func TestMakeDryRunDir(t *testing.T) {
	initRoot, joinRoot, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(initDryRunDirEnv, initRoot)
	t.Setenv(joinDryRunDirEnv, joinRoot)
	for _, c := range []struct{ env, prefix, parent string }{
		{initDryRunDirEnv, "kubeadm-init-dryrun", initRoot},
		{joinDryRunDirEnv, "kubeadm-join-dryrun", joinRoot},
	} {
		dir, err := makeDryRunDir(c.env, c.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(dir) != c.parent || !strings.HasPrefix(filepath.Base(dir), c.prefix) {
			t.Errorf("%s=%s: dry-run folder %s", c.env, c.parent, dir)
		}
	}
	t.Setenv(joinDryRunDirEnv, "")
	dir, err := makeDryRunDir(joinDryRunDirEnv, "kubeadm-join-dryrun")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp {
		t.Errorf("without %s: dry-run folder %s, want one in %s", joinDryRunDirEnv, dir, tmp)
	}
}
