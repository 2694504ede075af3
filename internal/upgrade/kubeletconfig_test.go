package upgrade_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

func kubeletConfig() *kubeletv1beta1.KubeletConfiguration {
	return &kubeletv1beta1.KubeletConfiguration{
		TypeMeta:      metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		ClusterDomain: "cluster.local",
		ClusterDNS:    []string{"10.96.0.10"},
		CgroupDriver:  "systemd",
	}
}

// backups lists the kubeadm-kubelet-config* folders under tmpDir.
func backups(t *testing.T, tmpDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmpDir, "kubeadm-kubelet-config*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteKubeletConfig(t *testing.T) {
	opts := kubelet.ConfigOptions{CRISocket: "unix:///run/containerd/containerd.sock"}
	want, err := kubelet.Config(kubeletConfig(), opts, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// previous is config.yaml before the call (nil: no file).
		previous    []byte
		wantChanged bool
	}{
		{name: "no previous file", wantChanged: true},
		{name: "different previous file", previous: []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDomain: old.local\n"), wantChanged: true},
		{name: "same content", previous: want, wantChanged: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			kubeletDir, tmpDir := filepath.Join(root, "var-lib-kubelet"), filepath.Join(root, "etc-kubernetes", "tmp")
			path := filepath.Join(kubeletDir, kubelet.ConfigFile)
			if tc.previous != nil {
				if err := os.MkdirAll(kubeletDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tc.previous, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			res, err := upgrade.WriteKubeletConfig(kubeletDir, tmpDir, kubeletConfig(), opts, &out)
			if err != nil {
				t.Fatalf("WriteKubeletConfig: %v", err)
			}
			if res.Changed != tc.wantChanged {
				t.Errorf("Changed = %v, want %v", res.Changed, tc.wantChanged)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("config.yaml holds:\n%s\nwant:\n%s", got, want)
			}
			if !bytes.Contains(got, []byte("containerRuntimeEndpoint: unix:///run/containerd/containerd.sock")) {
				t.Errorf("config.yaml lacks the node's runtime endpoint:\n%s", got)
			}
			if tc.wantChanged {
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
					t.Errorf("config.yaml mode: %v, %v; want 0644", st.Mode().Perm(), err)
				}
			}

			dirs := backups(t, tmpDir)
			if tc.previous == nil || !tc.wantChanged {
				if res.Backup != "" || len(dirs) != 0 {
					t.Errorf("a backup was made (Backup %q, folders %v), want none", res.Backup, dirs)
				}
				return
			}
			if len(dirs) != 1 {
				t.Fatalf("backup folders: %v, want one", dirs)
			}
			if wantBackup := filepath.Join(dirs[0], kubelet.ConfigFile); res.Backup != wantBackup {
				t.Errorf("Backup = %q, want %q", res.Backup, wantBackup)
			}
			if b, err := os.ReadFile(res.Backup); err != nil || !bytes.Equal(b, tc.previous) {
				t.Errorf("the backup holds %q (%v), want the previous file", b, err)
			}
			if !strings.Contains(out.String(), res.Backup) {
				t.Errorf("the output does not name the backup %s:\n%s", res.Backup, out.String())
			}
		})
	}
}

// TestWriteKubeletConfigTwice: the second run finds its own file and
// changes nothing.
func TestWriteKubeletConfigTwice(t *testing.T) {
	root := t.TempDir()
	kubeletDir, tmpDir := filepath.Join(root, "kubelet"), filepath.Join(root, "tmp")
	for i, wantChanged := range []bool{true, false} {
		res, err := upgrade.WriteKubeletConfig(kubeletDir, tmpDir, kubeletConfig(), kubelet.ConfigOptions{}, io.Discard)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if res.Changed != wantChanged || res.Backup != "" {
			t.Errorf("run %d: %+v, want Changed %v and no backup", i+1, res, wantChanged)
		}
	}
	if dirs := backups(t, tmpDir); len(dirs) != 0 {
		t.Errorf("backup folders: %v, want none", dirs)
	}
}

func TestWriteKubeletConfigNoConfiguration(t *testing.T) {
	root := t.TempDir()
	if _, err := upgrade.WriteKubeletConfig(filepath.Join(root, "kubelet"), filepath.Join(root, "tmp"), nil, kubelet.ConfigOptions{}, io.Discard); err == nil {
		t.Fatal("WriteKubeletConfig without a configuration succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "kubelet")); !os.IsNotExist(err) {
		t.Errorf("the kubelet folder was made (%v)", err)
	}
}

func TestRemoveKubeletFlags(t *testing.T) {
	root := t.TempDir()
	kubeletDir, tmpDir := filepath.Join(root, "var-lib-kubelet"), filepath.Join(root, "etc-kubernetes", "tmp")
	if err := os.MkdirAll(kubeletDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(kubeletDir, kubelet.FlagsEnvFile)
	old := `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=10.0.0.1"` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{kubelet.ContainerRuntimeEndpointFlag}

	var out bytes.Buffer
	dryRunDir := filepath.Join(root, "dry-run")
	if err := os.Mkdir(dryRunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, removed, err := upgrade.RemoveKubeletFlags(kubeletDir, tmpDir, names, true, dryRunDir, &out); err != nil || len(removed) != 1 {
		t.Fatalf("dry run: %v %v", removed, err)
	}
	if got, _ := os.ReadFile(path); string(got) != old {
		t.Errorf("the dry run changed the file: %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(dryRunDir, kubelet.FlagsEnvFile)); err != nil || string(got) != `KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.1"`+"\n" {
		t.Errorf("the dry run's copy of kubeadm-flags.env = %q, %v", got, err)
	}
	if _, err := os.Stat(tmpDir); err == nil {
		t.Errorf("the dry run made a backup folder")
	}
	if !strings.Contains(out.String(), "--node-ip=10.0.0.1") {
		t.Errorf("the dry run does not show the remaining flags:\n%s", out.String())
	}

	backup, removed, err := upgrade.RemoveKubeletFlags(kubeletDir, tmpDir, names, false, "", io.Discard)
	if err != nil || len(removed) != 1 {
		t.Fatalf("RemoveKubeletFlags: %v %v", removed, err)
	}
	if got, _ := os.ReadFile(path); string(got) != `KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.1"`+"\n" {
		t.Errorf("kubeadm-flags.env = %q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of kubeadm-flags.env: %v %v", fi.Mode(), err)
	}
	if got, err := os.ReadFile(backup); err != nil || string(got) != old {
		t.Errorf("backup %s = %q, %v", backup, got, err)
	}
	if !strings.HasPrefix(backup, filepath.Join(tmpDir, "kubeadm-kubelet-env")) {
		t.Errorf("backup in %s", backup)
	}

	// Again: nothing to do, no second backup.
	backup, removed, err = upgrade.RemoveKubeletFlags(kubeletDir, tmpDir, names, false, "", io.Discard)
	if err != nil || removed != nil || backup != "" {
		t.Errorf("second run: %q %v %v", backup, removed, err)
	}
	// No file: nothing to do.
	if _, removed, err := upgrade.RemoveKubeletFlags(t.TempDir(), tmpDir, names, false, "", io.Discard); err != nil || removed != nil {
		t.Errorf("without kubeadm-flags.env: %v %v", removed, err)
	}
}
