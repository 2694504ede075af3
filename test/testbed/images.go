package testbed

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// imagePath is the PATH of every test image: kubeadm's static pods call
// their binaries by bare name.
const imagePath = "PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Binaries says where the programs packed into images are.
type Binaries struct {
	// Kubernetes holds kube-apiserver, kube-controller-manager,
	// kube-scheduler and kube-proxy of one version.
	Kubernetes string
	Etcd       string // the etcd binary
	CoreDNS    string // the coredns binary
	Pause      string // the pause binary (test/images/pause)
	// Iptables are the files the kube-proxy image needs besides kube-proxy
	// (iptables, its extensions and libraries); looked up on the host
	// (slow: ldd on each) when nil.
	Iptables []ImageFile
}

// Images returns the images named by refs (the lines "kubeadm config images
// list" prints), each made of the matching binary. An unknown image name
// is an error: the test bed would not be able to run it.
func Images(refs []string, bins Binaries) ([]Image, error) {
	var out []Image
	for _, ref := range refs {
		name := imageName(ref)
		program, entrypoint, err := imageProgram(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		img := Image{Ref: ref, Env: []string{imagePath}, Entrypoint: entrypoint}
		switch name {
		case "kube-apiserver", "kube-controller-manager", "kube-scheduler":
			img.Files = []ImageFile{{Path: program, Source: filepath.Join(bins.Kubernetes, name)}}
		case "kube-proxy":
			if bins.Iptables == nil {
				if bins.Iptables, err = iptablesFiles(); err != nil {
					return nil, fmt.Errorf("image %s: %w", ref, err)
				}
			}
			img.Files = append(slices.Clip(bins.Iptables), ImageFile{Path: program, Source: filepath.Join(bins.Kubernetes, name)})
			img.Env = append(img.Env, "LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu")
		case "etcd":
			img.Files = []ImageFile{{Path: program, Source: bins.Etcd}}
		case "coredns":
			img.Files = []ImageFile{{Path: program, Source: bins.CoreDNS}}
		case "pause":
			img.Files = []ImageFile{{Path: program, Source: bins.Pause}}
		}
		for _, f := range img.Files {
			if f.Source == "" {
				continue
			}
			if _, err := os.Stat(f.Source); err != nil {
				return nil, fmt.Errorf("image %s needs %s: %w", ref, f.Source, err)
			}
		}
		out = append(out, img)
	}
	return out, nil
}

// imageProgram says where the program of the image named name (without
// registry and tag) is, and the image's entrypoint. The control-plane
// components, etcd and kube-proxy have none: their Pods name the program
// (by bare name through PATH, or kube-proxy by full path).
func imageProgram(name string) (program string, entrypoint []string, err error) {
	switch name {
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd":
		return "/usr/local/bin/" + name, nil, nil
	case "coredns", "pause":
		return "/" + name, []string{"/" + name}, nil
	}
	return "", nil, fmt.Errorf("no test image is made for %s", name)
}

// WriteCrashArchive writes to path an archive of one image published as
// ref (one of the images kubeadm lists, such as
// "registry.k8s.io/kube-apiserver:v1.36.3") whose program, at the path and
// with the entrypoint of the real test image, is crash (the built
// test/images/crash): every container of it exits with status 1 at once.
// Importing it into a node (Node.ImportImage) replaces the real image of
// that reference; importing the real archive again puts it back.
func WriteCrashArchive(path, ref, crash string) error {
	program, entrypoint, err := imageProgram(imageName(ref))
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	img := Image{Ref: ref, Env: []string{imagePath}, Entrypoint: entrypoint,
		Files: []ImageFile{{Path: program, Source: crash}}}
	if err := writeArchiveFile(path, img); err != nil {
		return fmt.Errorf("writing the crashing image %s: %w", ref, err)
	}
	return nil
}

// WebserverImage is the reference of the test bed's web server image
// (test/images/webserver), which WriteWebserverArchive writes.
const WebserverImage = "testbed.local/webserver:1"

// WriteWebserverArchive writes to path the archive of WebserverImage, whose
// program is webserver.
func WriteWebserverArchive(path, webserver string) error {
	img := Image{Ref: WebserverImage, Env: []string{imagePath}, Entrypoint: []string{"/webserver"},
		Files: []ImageFile{{Path: "webserver", Source: webserver}}}
	if err := writeArchiveFile(path, img); err != nil {
		return fmt.Errorf("writing the web server image: %w", err)
	}
	return nil
}

// imageName is the last path element of a reference, without tag.
func imageName(ref string) string {
	name := ref
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.Index(name, ":"); i >= 0 {
		name = name[:i]
	}
	return name
}

// ArchiveName is the file an image's archive is kept in.
func ArchiveName(ref string) string {
	return regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(ref, "_") + ".tar"
}

// WriteArchives writes one archive per image into dir and returns their
// paths. An archive made from the same inputs (inputsDigest) is kept.
func WriteArchives(dir string, images []Image) ([]string, error) {
	var paths []string
	for _, img := range images {
		p, err := WriteArchiveSet(dir, img)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteArchiveSet writes images into one archive in dir, named for the
// first, and returns its path: images that share a parent (Image.Parent)
// share its layers there. An archive made from the same inputs
// (inputsDigest) is kept.
func WriteArchiveSet(dir string, images ...Image) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, ArchiveName(images[0].Ref))
	h := sha256.New()
	for _, img := range images {
		digest, err := inputsDigest(img)
		if err != nil {
			return "", fmt.Errorf("image %s: %w", img.Ref, err)
		}
		fmt.Fprintln(h, digest)
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if upToDate(p, digest) {
		return p, nil
	}
	if err := writeArchiveFile(p, images...); err != nil {
		return "", fmt.Errorf("writing the archive of %s: %w", images[0].Ref, err)
	}
	if err := os.WriteFile(p+".inputs", []byte(digest+"\n"), 0o644); err != nil {
		return "", err
	}
	return p, nil
}

// writeArchiveFile writes the archive of img to path through a temporary
// file in the same folder, so a reader never sees half an archive.
func writeArchiveFile(path string, images ...Image) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".archive-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = WriteArchive(w, images...)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// inputsDigest sums up what an image's archive is made of: its references
// and configuration, its parent's inputs, and each entry with its kind,
// mode and target or content (for a host file: its path, size and
// modification time).
func inputsDigest(img Image) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q\n", img.Ref, img.Also, img.Env, img.Entrypoint, img.Cmd)
	if img.Parent != nil {
		parent, err := inputsDigest(*img.Parent)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "parent %s\n", parent)
	}
	for _, f := range img.Files {
		fmt.Fprintf(h, "%q %d %o %q", f.Path, f.Kind, f.Mode, f.Target)
		if f.Source != "" {
			st, err := os.Stat(f.Source)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, " %q %d %d", f.Source, st.Size(), st.ModTime().UnixNano())
		} else {
			sum := sha256.Sum256(f.Data)
			fmt.Fprintf(h, " %x", sum)
		}
		fmt.Fprintln(h)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// upToDate reports whether the archive at p exists and was made from
// inputs with the given digest.
func upToDate(p, digest string) bool {
	if _, err := os.Stat(p); err != nil {
		return false
	}
	old, err := os.ReadFile(p + ".inputs")
	return err == nil && strings.TrimSpace(string(old)) == digest
}

// iptablesFiles returns the host's iptables (nft and legacy back ends),
// their extensions and every shared library they need, at the same paths
// in the image: kube-proxy programs the node's packet filter through them.
func iptablesFiles() ([]ImageFile, error) {
	const sbin = "/usr/sbin"
	multis := map[string][]string{
		"xtables-nft-multi": {"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
			"iptables-nft", "iptables-nft-save", "iptables-nft-restore", "ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore"},
		"xtables-legacy-multi": {"iptables-legacy", "iptables-legacy-save", "iptables-legacy-restore",
			"ip6tables-legacy", "ip6tables-legacy-save", "ip6tables-legacy-restore"},
	}
	var files []ImageFile
	var elfs []string
	for multi, links := range multis {
		p := filepath.Join(sbin, multi)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("iptables for the kube-proxy image: %w (install Debian's iptables)", err)
		}
		files = append(files, ImageFile{Path: p, Source: p})
		elfs = append(elfs, p)
		for _, l := range links {
			files = append(files, ImageFile{Path: path.Join(sbin, l), Kind: Symlink, Target: multi})
		}
	}
	exts, err := filepath.Glob("/usr/lib/x86_64-linux-gnu/xtables/*.so")
	if err != nil || len(exts) == 0 {
		return nil, fmt.Errorf("iptables extensions not found under /usr/lib/x86_64-linux-gnu/xtables")
	}
	for _, e := range exts {
		files = append(files, ImageFile{Path: e, Source: e})
		elfs = append(elfs, e)
	}
	libs, err := sharedLibraries(elfs)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			return nil, err
		}
		files = append(files, ImageFile{Path: l, Source: real})
	}
	return files, nil
}

// sharedLibraries lists, with ldd, the libraries and the loader the given
// programs and plugins load, each once.
func sharedLibraries(elfs []string) ([]string, error) {
	seen := map[string]bool{}
	for _, e := range elfs {
		out, err := exec.Command("ldd", e).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return nil, fmt.Errorf("ldd %s: %w: %s", e, err, ee.Stderr)
			}
			return nil, fmt.Errorf("ldd %s: %w", e, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			for _, field := range strings.Fields(sc.Text()) {
				if strings.HasPrefix(field, "/") {
					seen[field] = true
				}
			}
		}
	}
	libs := make([]string, 0, len(seen))
	for l := range seen {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	return libs, nil
}
