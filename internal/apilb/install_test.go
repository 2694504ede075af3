package apilb

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

func TestInstallIsIdempotentAndRemovable(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "kubeadm-new")
	if err := os.WriteFile(src, []byte("#!binary v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	kdir := filepath.Join(root, "etc-kubernetes")
	opts := InstallOptions{
		PodOptions:  PodOptions{Image: "registry.k8s.io/pause:3.10.2", KubernetesDir: kdir, Preferred: "10.0.0.1:6443"},
		ManifestDir: filepath.Join(kdir, "manifests"),
		Source:      src,
		Binary:      filepath.Join(root, "var-lib-kubeadm", "kubeadm"),
		Seed:        []string{"10.0.0.2:6443", "10.0.0.1:6443"},
		Out:         io.Discard,
	}
	if err := Install(opts); err != nil {
		t.Fatalf("Install: %v", err)
	}
	fi, err := os.Stat(opts.Binary)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("binary copy: %v, %v; want mode 0755", fi, err)
	}
	manifest := staticpod.ManifestPath(opts.ManifestDir, Component)
	pod, err := staticpod.ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := kubeadmbinary.SHA256(src)
	if pod.Annotations[BinaryHashAnnotation] != sum {
		t.Errorf("annotation %s = %q, want the binary's hash %s", BinaryHashAnnotation, pod.Annotations[BinaryHashAnnotation], sum)
	}
	flags := staticpod.Flags(pod)
	if flags["prefer"] != "10.0.0.1:6443" || flags["listen"] != ListenAddress {
		t.Errorf("flags %v", flags)
	}
	list, err := ReadUpstreams(filepath.Join(kdir, StateDir, UpstreamsFile))
	if err != nil || !slices.Equal(list, []string{"10.0.0.1:6443", "10.0.0.2:6443"}) {
		t.Fatalf("saved list %v, %v", list, err)
	}

	// Again, with one more seed: the manifest stays byte for byte, the
	// list grows.
	before, _ := os.Stat(manifest)
	opts.Seed = []string{"10.0.0.3:6443"}
	if err := Install(opts); err != nil {
		t.Fatalf("Install again: %v", err)
	}
	after, _ := os.Stat(manifest)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a re-run rewrote the manifest (the kubelet would restart the Pod)")
	}
	list, _ = ReadUpstreams(filepath.Join(kdir, StateDir, UpstreamsFile))
	if len(list) != 3 {
		t.Errorf("saved list after a second seed: %v", list)
	}

	// A new binary (an upgrade) changes the manifest.
	if err := os.WriteFile(src, []byte("#!binary v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Install(opts); err != nil {
		t.Fatal(err)
	}
	pod, _ = staticpod.ReadManifest(manifest)
	if pod.Annotations[BinaryHashAnnotation] == sum {
		t.Errorf("the manifest still names the old binary")
	}
	if got, _ := os.ReadFile(opts.Binary); !strings.Contains(string(got), "v2") {
		t.Errorf("the binary copy was not replaced: %q", got)
	}

	installed, preferred, err := Installed(opts.ManifestDir)
	if err != nil || !installed || preferred != "10.0.0.1:6443" {
		t.Errorf("Installed = %v, %q, %v", installed, preferred, err)
	}
	if err := Remove(opts.ManifestDir, kdir); err != nil {
		t.Fatal(err)
	}
	if installed, _, _ := Installed(opts.ManifestDir); installed {
		t.Error("manifest left after Remove")
	}
	if _, err := os.Stat(filepath.Join(kdir, StateDir)); !os.IsNotExist(err) {
		t.Errorf("state folder left after Remove: %v", err)
	}
	if err := Remove(opts.ManifestDir, kdir); err != nil {
		t.Errorf("Remove twice: %v", err)
	}
}

func TestDryRunWritesOnlyTheManifest(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "kubeadm")
	if err := os.WriteFile(src, []byte("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	kdir := filepath.Join(root, "etc-kubernetes")
	opts := InstallOptions{
		PodOptions:  PodOptions{Image: "pause", KubernetesDir: kdir},
		ManifestDir: filepath.Join(root, "dryrun"),
		Source:      src, Binary: filepath.Join(root, "copy"), Seed: []string{"10.0.0.1:6443"},
		DryRun: true, Out: io.Discard,
	}
	if err := Install(opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staticpod.ManifestPath(opts.ManifestDir, Component)); err != nil {
		t.Errorf("dry run wrote no manifest: %v", err)
	}
	for _, p := range []string{opts.Binary, filepath.Join(kdir, StateDir)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("dry run wrote %s", p)
		}
	}
}

func TestClientCertificatePrefersTheKubeletsRotatedFile(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubelet.conf")
	conf := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: u
  user: {client-certificate-data: ` + "Zm9v" + `, client-key-data: ` + "YmFy" + `}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(kc, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	rotated := filepath.Join(dir, "kubelet-client-current.pem")
	tests := []struct {
		name              string
		certFile          string
		write             bool
		wantCert, wantKey string
	}{
		{name: "rotated file readable", certFile: rotated, write: true, wantCert: "both", wantKey: "both"},
		{name: "rotated file missing", certFile: filepath.Join(dir, "missing.pem"), wantCert: "foo", wantKey: "bar"},
		{name: "no rotated file asked", wantCert: "foo", wantKey: "bar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.write {
				if err := os.WriteFile(tt.certFile, []byte("both"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, k, err := ClientCertificate(kc, tt.certFile)
			if err != nil || string(c) != tt.wantCert || string(k) != tt.wantKey {
				t.Fatalf("got %q, %q, %v; want %q, %q", c, k, err, tt.wantCert, tt.wantKey)
			}
		})
	}
}
