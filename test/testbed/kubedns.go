package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// KubeDNSCommit is the kubernetes/dns commit whose vendored source
// (../shared/third_party/kubernetes-dns-<commit>.tar.gz, or the archive
// KUBEDNS_SOURCE names) hack/build-upstream.sh builds the kube-dns addon's
// programs from.
const KubeDNSCommit = "9aa70b8f"

// kubeDNSPrograms are the kube-dns addon's programs, each the entrypoint
// of its image.
var kubeDNSPrograms = map[string]string{
	"k8s-dns-kube-dns":      "kube-dns",
	"k8s-dns-dnsmasq-nanny": "dnsmasq-nanny",
	"k8s-dns-sidecar":       "sidecar",
}

// kubeDNSDir is where hack/build-upstream.sh puts the kube-dns programs.
func kubeDNSDir(repo string) string {
	return filepath.Join(repo, ".cache", "upstream", "kube-dns-"+KubeDNSCommit)
}

// KubeDNSImages writes the archives of the kube-dns addon's three images,
// as our kubeadm lists them for t's version with the CoreDNS feature gate
// off, into .cache/images/<version>/kube-dns, and returns their paths
// (kept when their inputs did not change). It builds the programs first
// when they are missing (hack/build-upstream.sh kube-dns, ≈ 1 minute) and
// takes dnsmasq, with the libraries it loads, from Debian's dnsmasq-base
// package (kept in .cache/debian): the nanny runs /usr/sbin/dnsmasq.
func (t *Toolchain) KubeDNSImages(ctx context.Context, out io.Writer) ([]string, error) {
	start := time.Now()
	dir := kubeDNSDir(t.Repo)
	var missing bool
	for _, p := range kubeDNSPrograms {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = true
		}
	}
	if missing {
		fmt.Fprintf(out, "[testbed] building the kube-dns programs of kubernetes/dns %s\n", KubeDNSCommit)
		cmd := exec.CommandContext(ctx, filepath.Join(t.Repo, "hack", "build-upstream.sh"), "kube-dns")
		cmd.Dir = t.Repo
		cmd.Env = append(os.Environ(), "KUBEDNS_COMMIT="+KubeDNSCommit)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("hack/build-upstream.sh kube-dns: %w", err)
		}
	}
	list, err := exec.CommandContext(ctx, t.Kubeadm, "config", "images", "list",
		"--kubernetes-version", t.KubernetesVersion, "--feature-gates", "CoreDNS=false").Output()
	if err != nil {
		return nil, fmt.Errorf("kubeadm config images list --feature-gates CoreDNS=false: %w", err)
	}
	var images []Image
	for _, ref := range strings.Fields(string(bytes.TrimSpace(list))) {
		program, ok := kubeDNSPrograms[imageName(ref)]
		if !ok {
			continue
		}
		img := Image{Ref: ref, Env: []string{imagePath}, Entrypoint: []string{"/" + program},
			Files: []ImageFile{{Path: "/" + program, Source: filepath.Join(dir, program), Mode: 0o755}}}
		if program == "dnsmasq-nanny" {
			files, err := dnsmasqFiles(ctx, NewDebianPool(filepath.Join(t.Repo, ".cache", "debian")))
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", ref, err)
			}
			img.Files = append(files, img.Files...)
			img.Env = append(img.Env, "LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu")
		}
		images = append(images, img)
	}
	if len(images) != len(kubeDNSPrograms) {
		return nil, fmt.Errorf("kubeadm config images list --feature-gates CoreDNS=false named %d kube-dns images, want %d:\n%s", len(images), len(kubeDNSPrograms), list)
	}
	archives, err := WriteArchives(filepath.Join(t.Repo, ".cache", "images", t.KubernetesVersion, "kube-dns"), images)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "[testbed] %d kube-dns images of %s ready in %.1fs\n", len(archives), t.KubernetesVersion, time.Since(start).Seconds())
	return archives, nil
}

// dnsmasqFiles are the files of the dnsmasq-nanny image besides the
// nanny: Debian's dnsmasq-base (dnsmasq and the libraries it loads), a
// configuration that keeps dnsmasq root rather than dropping to "nobody",
// the root user and group it looks up for that, and the folders the nanny
// and dnsmasq use.
func dnsmasqFiles(ctx context.Context, pool *DebianPool) ([]ImageFile, error) {
	files, err := pool.Files(ctx, []string{"dnsmasq-base"})
	if err != nil {
		return nil, err
	}
	return append(files,
		ImageFile{Path: "/etc/dnsmasq.conf", Data: []byte("user=root\n"), Mode: 0o644},
		ImageFile{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n"), Mode: 0o644},
		ImageFile{Path: "/etc/group", Data: []byte("root:x:0:\n"), Mode: 0o644},
		ImageFile{Path: "/etc/k8s/dns/dnsmasq-nanny", Kind: Directory, Mode: 0o755},
		ImageFile{Path: "/run/dnsmasq", Kind: Directory, Mode: 0o755},
		ImageFile{Path: "/var/run", Kind: Symlink, Target: "/run"},
		ImageFile{Path: "/tmp", Kind: Directory, Mode: os.ModeSticky | 0o777},
	), nil
}

// ResolveRef is the image of the test bed's DNS client
// (test/images/resolve), for Pods that look a name up in a loop.
const ResolveRef = "kubeadm-testbed.local/resolve:v1"

// ResolveImage writes the archive of the DNS client's image (ResolveRef:
// the resolve program as its entrypoint) into .cache/images/<version>
// and returns its path.
func (t *Toolchain) ResolveImage() (string, error) {
	img := Image{Ref: ResolveRef, Env: []string{imagePath}, Entrypoint: []string{"/resolve"},
		Files: []ImageFile{{Path: "/resolve", Source: t.Resolve, Mode: 0o755}}}
	return WriteArchiveSet(filepath.Join(t.Repo, ".cache", "images", t.KubernetesVersion), img)
}
