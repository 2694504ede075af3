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
	// The folder the variable names is the dry-run folder itself, flat,
	// as upstream's.
	for _, want := range []string{"ca.crt", "etcd/ca.key", "admin.conf", "kube-apiserver.yaml", "etcd.yaml", "config.yaml", "kubeadm-flags.env"} {
		if _, err := os.Stat(filepath.Join(dryRoot, want)); err != nil {
			t.Errorf("dry run did not write %s into its folder: %v", want, err)
		}
	}
	// As upstream's: etcd's manifest right after its phase; the folder,
	// the other manifests and the kubelet's files before the wait for the
	// control plane; certificates, keys and kubeconfig files not at all.
	shown := []string{
		`[etcd] Creating static Pod manifest for local etcd in "` + dryRoot + `"` + "\n" +
			`[dryrun] Would write file "/etc/kubernetes/manifests/etcd.yaml" with content:` + "\napiVersion: v1\nkind: Pod\n",
		`[dryrun] Wrote certificates, kubeconfig files and control plane manifests to the "` + dryRoot + `" directory` + "\n",
		`[dryrun] Would write file "/etc/kubernetes/manifests/kube-apiserver.yaml" with content:` + "\napiVersion: v1\n",
		`[dryrun] Would write file "/etc/kubernetes/manifests/kube-controller-manager.yaml" with content:`,
		`[dryrun] Would write file "/etc/kubernetes/manifests/kube-scheduler.yaml" with content:`,
		`[dryrun] Would write file "/var/lib/kubelet/config.yaml" with content:` + "\napiVersion: kubelet.config.k8s.io/v1beta1\n",
		`[dryrun] Would write file "/var/lib/kubelet/kubeadm-flags.env" with content:` + "\nKUBELET_KUBEADM_ARGS=",
		"[dryrun] Would wait for the kubelet",
	}
	at := 0
	for _, want := range shown {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("dry run output lacks %q after byte %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	if n := strings.Count(out, "Would write file"); n != 6+2 { // 2: the renewal schedule
		t.Errorf("dry run showed %d files, want 8:\n%s", n, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "[dryrun] Would write file") && (strings.Contains(line, `.conf"`) || strings.Contains(line, `.key"`) || strings.Contains(line, `.crt"`)) {
			t.Errorf("dry run output lists %s", line)
		}
	}
	if strings.Contains(out, "PRIVATE KEY") {
		t.Error("dry run printed key material")
	}
}

// TestMakeDryRunDir: init and join write into the folder their own
// environment variable (KUBEADM_INIT_DRYRUN_DIR, KUBEADM_JOIN_DRYRUN_DIR)
// names, made if missing, as upstream's; else into a new folder in the
// parent given (/etc/kubernetes/tmp, as upstream's), made if missing.
func TestMakeDryRunDir(t *testing.T) {
	initDir, joinDir, parent := t.TempDir(), filepath.Join(t.TempDir(), "new", "join"), filepath.Join(t.TempDir(), "etc", "kubernetes", "tmp")
	t.Setenv(initDryRunDirEnv, initDir)
	t.Setenv(joinDryRunDirEnv, joinDir)
	for _, c := range []struct{ env, prefix, want string }{
		{initDryRunDirEnv, "kubeadm-init-dryrun", initDir},
		{joinDryRunDirEnv, "kubeadm-join-dryrun", joinDir},
	} {
		var msg strings.Builder
		dir, err := makeDryRunDir(c.env, parent, c.prefix, &msg)
		if err != nil {
			t.Fatal(err)
		}
		if dir != c.want {
			t.Errorf("%s=%s: dry-run folder %s", c.env, c.want, dir)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", dir, err)
		}
		if !strings.Contains(msg.String(), dir) {
			t.Errorf("message %q does not name %s", msg.String(), dir)
		}
	}
	t.Setenv(joinDryRunDirEnv, "")
	var msg strings.Builder
	dir, err := makeDryRunDir(joinDryRunDirEnv, parent, "kubeadm-join-dryrun", &msg)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != parent || !strings.HasPrefix(filepath.Base(dir), "kubeadm-join-dryrun") {
		t.Errorf("without %s: dry-run folder %s, want a new one in %s", joinDryRunDirEnv, dir, parent)
	}
	if fi, err := os.Stat(parent); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the parent folder: %v, %v; want it made, mode 0700", fi, err)
	}
	if !strings.Contains(msg.String(), joinDryRunDirEnv) {
		t.Errorf("message %q does not say how to choose the folder", msg.String())
	}
	if dryRunParent != "/etc/kubernetes/tmp" {
		t.Errorf("dry runs' folders are made in %s, want upstream's /etc/kubernetes/tmp", dryRunParent)
	}
	// Upstream's names, as its dry runs print them.
	for got, want := range map[string]string{
		initDryRunPrefix: "kubeadm-init-dryrun", joinDryRunPrefix: "kubeadm-join-dryrun",
		upgradeApplyDryRunPrefix: "kubeadm-upgrade-apply-dryrun", upgradeNodeDryRunPrefix: "kubeadm-upgrade-node-dryrun",
	} {
		if got != want {
			t.Errorf("dry-run folder prefix %q, want upstream's %q", got, want)
		}
	}
}

// TestControlPlaneExtraArgsFlags: the control-plane phases take upstream's
// hidden, deprecated --*-extra-args flags into the components' command
// lines, each phase its own component's.
func TestControlPlaneExtraArgsFlags(t *testing.T) {
	for _, tc := range []struct {
		phase, flag, manifest string
	}{
		{"apiserver", "--apiserver-extra-args", "kube-apiserver.yaml"},
		{"controller-manager", "--controller-manager-extra-args", "kube-controller-manager.yaml"},
		{"scheduler", "--scheduler-extra-args", "kube-scheduler.yaml"},
		{"all", "--scheduler-extra-args", "kube-scheduler.yaml"},
	} {
		t.Run(tc.phase+" "+tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(initDryRunDirEnv, dir)
			args := []string{"init", "phase", "control-plane", tc.phase, "--dry-run", "--kubernetes-version", "v1.36.3",
				tc.flag, "v=4,profiling=true", tc.flag, "contention-profiling=true"}
			if tc.phase == "apiserver" || tc.phase == "all" {
				args = append(args, "--apiserver-advertise-address", "192.0.2.10")
			}
			out, errOut, code := run(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, "Flag "+tc.flag+" has been deprecated") || strings.Contains(out, "deprecated") {
				t.Errorf("the deprecation warning is not on stderr (alone):\nstdout:\n%s\nstderr:\n%s", out, errOut)
			}
			b, err := os.ReadFile(filepath.Join(dir, tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			// In the order given, after the defaults, as upstream's.
			if want := "- --v=4\n    - --profiling=true\n    - --contention-profiling=true\n"; !strings.Contains(string(b), want) {
				t.Errorf("%s has no %q:\n%s", tc.manifest, want, b)
			}
		})
	}
	// Each item must be one name=value pair.
	for _, bad := range []string{"", "a=b=c", "a=b,,c=d"} {
		if _, _, code := run(t, "init", "phase", "control-plane", "scheduler", "--dry-run", "--scheduler-extra-args", bad); code != 1 {
			t.Errorf("--scheduler-extra-args %q: exit %d, want 1", bad, code)
		}
	}
	// A flag of another component is refused.
	if _, _, code := run(t, "init", "phase", "control-plane", "scheduler", "--dry-run", "--apiserver-extra-args", "v=4"); code == 0 {
		t.Error("the scheduler phase took --apiserver-extra-args")
	}
	// Like every flag the configuration file can express, not with --config.
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "init", "phase", "control-plane", "apiserver", "--dry-run", "--config", cfg, "--apiserver-extra-args", "v=4")
	if code == 0 || !strings.Contains(errOut, "can not mix '--config' with arguments [apiserver-extra-args]") {
		t.Errorf("--config with --apiserver-extra-args: exit %d\n%s", code, errOut)
	}
}
