package testbed

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWriteCrashArchive checks that the crashing image takes the place of
// the real one: same reference, the program where the real image has it,
// the same entrypoint.
func TestWriteCrashArchive(t *testing.T) {
	dir := t.TempDir()
	crash := filepath.Join(dir, "crash")
	if err := os.WriteFile(crash, []byte("crash program"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, program string
		entrypoint   []string
	}{
		{"registry.k8s.io/kube-apiserver:v1.37.2", "usr/local/bin/kube-apiserver", nil},
		{"registry.k8s.io/etcd:3.7.0-0", "usr/local/bin/etcd", nil},
		{"registry.k8s.io/coredns/coredns:v1.14.6", "coredns", []string{"/coredns"}},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			path := filepath.Join(dir, ArchiveName(tc.ref))
			if err := WriteCrashArchive(path, tc.ref, crash); err != nil {
				t.Fatal(err)
			}
			blobs := readArchive(t, path)
			var index struct {
				Manifests []descriptor `json:"manifests"`
			}
			mustDecode(t, blobs["index.json"], &index)
			if len(index.Manifests) != 1 || index.Manifests[0].Annotations[annotationImageName] != tc.ref {
				t.Fatalf("index names %+v, want only %s", index.Manifests, tc.ref)
			}
			var manifest struct {
				Config descriptor   `json:"config"`
				Layers []descriptor `json:"layers"`
			}
			mustDecode(t, blobs[blobPath(index.Manifests[0].Digest)], &manifest)
			var cfg struct {
				Config struct {
					Env        []string `json:"Env"`
					Entrypoint []string `json:"Entrypoint"`
				} `json:"config"`
			}
			mustDecode(t, blobs[blobPath(manifest.Config.Digest)], &cfg)
			if !slices.Equal(cfg.Config.Entrypoint, tc.entrypoint) || !slices.Contains(cfg.Config.Env, imagePath) {
				t.Errorf("config %+v, want entrypoint %v and %s", cfg.Config, tc.entrypoint, imagePath)
			}
			if len(manifest.Layers) != 1 {
				t.Fatalf("%d layers", len(manifest.Layers))
			}
			layer := readTar(t, blobs[blobPath(manifest.Layers[0].Digest)])
			if got, ok := layer[tc.program]; !ok || string(got) != "crash program" {
				t.Errorf("layer entries %v: %s is not the crash program", slices.Sorted(maps.Keys(layer)), tc.program)
			}
		})
	}
	if err := WriteCrashArchive(filepath.Join(dir, "x.tar"), "registry.k8s.io/unknown:v1", crash); err == nil {
		t.Errorf("a crashing image for an image the test bed does not make was written")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".archive-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestUpgradeCluster checks that an upgrade cluster starts with the older
// programs and imports every image of both versions once.
func TestUpgradeCluster(t *testing.T) {
	from := &Toolchain{Repo: "/r", KubernetesVersion: "v1.36.3", Upstream: "/r/up/v1.36.3", Testbed: "/bin/testbed",
		Kubeadm: "/bin/kubeadm", PauseImage: "registry.k8s.io/pause:3.10.2",
		Archives: []string{"/img/v1.36.3/registry.k8s.io_kube-apiserver_v1.36.3.tar", "/img/v1.36.3/registry.k8s.io_pause_3.10.2.tar"}}
	to := &Toolchain{Repo: "/r", KubernetesVersion: "v1.37.2", Upstream: "/r/up/v1.37.2", Testbed: "/bin/testbed",
		Kubeadm: "/bin/kubeadm", PauseImage: "registry.k8s.io/pause:3.10.2",
		Archives: []string{"/img/v1.37.2/registry.k8s.io_kube-apiserver_v1.37.2.tar", "/img/v1.37.2/registry.k8s.io_pause_3.10.2.tar"}}
	c := from.UpgradeCluster(to, "u", "/state", nil)
	want := []string{"/img/v1.36.3/registry.k8s.io_kube-apiserver_v1.36.3.tar", "/img/v1.36.3/registry.k8s.io_pause_3.10.2.tar",
		"/img/v1.37.2/registry.k8s.io_kube-apiserver_v1.37.2.tar"}
	if !slices.Equal(c.Archives, want) {
		t.Errorf("archives %v, want %v", c.Archives, want)
	}
	if c.Programs["kubelet"] != "/r/up/v1.36.3/kubelet" || c.Programs["kubectl"] != "/r/up/v1.36.3/kubectl" {
		t.Errorf("programs %v, want the kubelet and kubectl of v1.36.3", c.Programs)
	}
	if c.Programs[OldKubeadm] != "/r/.cache/upstream/v1.36.3/kubeadm" || c.Programs["kubeadm"] != "/bin/kubeadm" {
		t.Errorf("programs %v, want upstream's kubeadm of v1.36.3 as %s and ours as kubeadm", c.Programs, OldKubeadm)
	}
	if len(from.Archives) != 2 {
		t.Errorf("UpgradeCluster changed the toolchain's archives: %v", from.Archives)
	}
	if a, err := to.Archive("registry.k8s.io/kube-apiserver:v1.37.2"); err != nil || a != to.Archives[0] {
		t.Errorf("Archive = %q, %v", a, err)
	}
	if _, err := to.Archive("registry.k8s.io/kube-apiserver:v1.36.3"); err == nil {
		t.Errorf("Archive found an image of another version")
	}
}

func blobPath(digest string) string { return "blobs/sha256/" + digest[len("sha256:"):] }

// readArchive returns the regular files of a tar file by name.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, data)
}

func readTar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			content, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[hdr.Name] = content
		}
	}
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// TestWriteArchives checks that an archive is written again exactly when
// what it is made of changes, and that special mode bits and the default
// command reach the image.
func TestWriteArchives(t *testing.T) {
	dir := t.TempDir()
	img := Image{Ref: "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", Env: []string{imagePath}, Cmd: []string{"sh"},
		Files: []ImageFile{
			{Path: "/tmp", Kind: Directory, Mode: os.ModeSticky | 0o777},
			{Path: "/usr/local/bin/nnp", Data: []byte("nnp"), Mode: os.ModeSetuid | 0o755},
		}}
	write := func(img Image) os.FileInfo {
		t.Helper()
		paths, err := WriteArchives(dir, []Image{img})
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := write(img)
	past := first.ModTime().Add(-time.Hour)
	p := filepath.Join(dir, ArchiveName(img.Ref))
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	if st := write(img); !st.ModTime().Equal(past) {
		t.Errorf("an archive of the same inputs was written again")
	}
	img.Files[1].Data = []byte("nnp, changed")
	if st := write(img); st.ModTime().Equal(past) {
		t.Errorf("an archive whose file changed was kept")
	}

	blobs := readArchive(t, p)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustDecode(t, blobs["index.json"], &index)
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustDecode(t, blobs[blobPath(index.Manifests[0].Digest)], &manifest)
	var cfg struct {
		Config struct {
			Cmd []string `json:"Cmd"`
		} `json:"config"`
	}
	mustDecode(t, blobs[blobPath(manifest.Config.Digest)], &cfg)
	if !slices.Equal(cfg.Config.Cmd, []string{"sh"}) {
		t.Errorf("Cmd %v, want [sh]", cfg.Config.Cmd)
	}
	modes := map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(blobs[blobPath(manifest.Layers[0].Digest)]))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[hdr.Name] = hdr.Mode
	}
	if modes["tmp/"] != 0o1777 || modes["usr/local/bin/nnp"] != 0o4755 {
		t.Errorf("modes tmp/ %o, nnp %o, want 1777 and 4755", modes["tmp/"], modes["usr/local/bin/nnp"])
	}
}

// TestWriteArchiveSet checks an archive of several images: extra tags of
// one image, and an image on a parent whose layer it shares with the
// parent image (one blob).
func TestWriteArchiveSet(t *testing.T) {
	base := Image{Ref: "r/agnhost:2.63.0", Also: []string{"r/agnhost:2.55"}, Entrypoint: []string{"/agnhost"},
		Files: []ImageFile{{Path: "/agnhost", Data: []byte("agnhost")}}}
	kitten := Image{Ref: "r/kitten:1.8", Parent: &base, Cmd: []string{"test-webserver"},
		Files: []ImageFile{{Path: "/kitten.jpg", Data: []byte("kitten")}}}
	p, err := WriteArchiveSet(t.TempDir(), base, kitten)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p) != ArchiveName(base.Ref) {
		t.Errorf("archive %s, want it named for %s", p, base.Ref)
	}
	blobs := readArchive(t, p)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustDecode(t, blobs["index.json"], &index)
	manifests := map[string]string{}
	for _, m := range index.Manifests {
		manifests[m.Annotations[annotationImageName]] = m.Digest
	}
	if len(manifests) != 3 || manifests["r/agnhost:2.63.0"] != manifests["r/agnhost:2.55"] {
		t.Fatalf("index %v, want both agnhost tags on one manifest and kitten", manifests)
	}
	layersOf := func(ref string) []string {
		var m struct {
			Layers []descriptor `json:"layers"`
		}
		mustDecode(t, blobs[blobPath(manifests[ref])], &m)
		var out []string
		for _, l := range m.Layers {
			out = append(out, l.Digest)
		}
		return out
	}
	a, k := layersOf("r/agnhost:2.63.0"), layersOf("r/kitten:1.8")
	if len(a) != 1 || len(k) != 2 || k[0] != a[0] {
		t.Errorf("layers agnhost %v, kitten %v: want kitten on agnhost's layer", a, k)
	}
	if layer := readTar(t, blobs[blobPath(k[1])]); string(layer["kitten.jpg"]) != "kitten" || len(layer) != 1 {
		t.Errorf("kitten's own layer holds %v", slices.Sorted(maps.Keys(layer)))
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	layerBlobs := 0
	for tr := tar.NewReader(bytes.NewReader(data)); ; {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == blobPath(a[0]) {
			layerBlobs++
		}
	}
	if layerBlobs != 1 {
		t.Errorf("agnhost's layer is %d times in the archive", layerBlobs)
	}
}
