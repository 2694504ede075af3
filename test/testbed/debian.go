package testbed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Test images that need programs Kubernetes does not build (a shell, nc,
// dig, nginx...) take them from Debian's packages, as the kube-proxy image
// takes iptables: the packages are fetched with "apt-get download" and
// unpacked with "dpkg-deb -x" (nothing is installed on the host), and
// their files go into the image's layer. Maintainer scripts never run, so
// what they would make (alternatives links, users) is written by the
// image's own definition.

// installOnly are packages that only serve installing other packages:
// a dependency on them is not followed (no image runs dpkg or debconf).
var installOnly = map[string]bool{
	"debconf": true, "debconf-2.0": true, "cdebconf": true, "dpkg": true, "perl-base": true,
	"init-system-helpers": true, "lsb-base": true, "sysvinit-utils": true, "adduser": true,
	"passwd": true, "install-info": true, "usrmerge": true, "usr-is-merged": true,
	"libpam-runtime": true, "systemd": true, "systemd-sysv": true, "libdebconfclient0": true,
	"readline-common": true, "sensible-utils": true, "ucf": true,
}

// debianSkipped are paths of packages no test image needs (documentation,
// manuals, translations): left out to keep the layers small.
var debianSkipped = []string{"/usr/share/doc", "/usr/share/man", "/usr/share/info",
	"/usr/share/locale", "/usr/share/lintian", "/usr/share/bug", "/usr/share/bash-completion",
	"/usr/share/zsh", "/usr/share/doc-base", "/usr/share/gitweb"}

// aptRunner runs an apt or dpkg program and returns its standard output.
type aptRunner func(ctx context.Context, dir, name string, args ...string) ([]byte, error)

// runApt runs a program in dir, folding its standard error into the error.
func runApt(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// DebianPool fetches and unpacks Debian packages into Dir (one folder per
// package file under Dir/unpacked, the files under Dir/debs): a package
// file, named with its version, is fetched and unpacked once.
type DebianPool struct {
	Dir string
	run aptRunner
}

// NewDebianPool returns a pool kept in dir.
func NewDebianPool(dir string) *DebianPool { return &DebianPool{Dir: dir, run: runApt} }

// Resolve returns roots and every package they depend on (Depends and
// Pre-Depends, recursively), sorted. Of the packages that satisfy one
// dependency (alternatives, providers of a virtual package) one already
// taken is kept, else the first; dependencies on installOnly packages are
// not followed.
func (p *DebianPool) Resolve(ctx context.Context, roots []string) ([]string, error) {
	seen := map[string]bool{}
	todo := slices.Clone(roots)
	for _, r := range roots {
		seen[r] = true
	}
	for len(todo) > 0 {
		out, err := p.run(ctx, "", "apt-cache", append([]string{"depends", "--no-recommends", "--no-suggests",
			"--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"}, todo...)...)
		if err != nil {
			return nil, fmt.Errorf("resolving Debian packages: %w", err)
		}
		deps, err := parseAptDepends(out)
		if err != nil {
			return nil, err
		}
		todo = nil
		for _, pkg := range slices.Sorted(maps.Keys(deps)) {
			for _, candidates := range deps[pkg] {
				if slices.ContainsFunc(candidates, func(c string) bool { return seen[c] || installOnly[c] }) {
					continue
				}
				seen[candidates[0]] = true
				todo = append(todo, candidates[0])
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// parseAptDepends reads "apt-cache depends" output: for each package, its
// dependencies, each as the packages that satisfy it in apt's order (the
// alternatives, a virtual one replaced by its providers). A dependency
// nothing satisfies is left out.
func parseAptDepends(out []byte) (map[string][][]string, error) {
	deps := map[string][][]string{}
	var pkg string
	// group holds the alternatives of the dependency being read, provider
	// lines are added after the virtual alternative they follow.
	var group []string
	inVirtual, pendingAlt := false, false
	flush := func() {
		if pkg != "" && len(group) > 0 {
			deps[pkg] = append(deps[pkg], group)
		}
		group = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case !strings.HasPrefix(line, " "):
			flush()
			pkg, pendingAlt, inVirtual = strings.TrimSpace(line), false, false
			if strings.HasPrefix(pkg, "<") {
				pkg = "" // a virtual package asked for by name: nothing to read
			} else if _, ok := deps[pkg]; !ok {
				deps[pkg] = nil // known, even with no dependency
			}
		case strings.HasPrefix(line, "    "):
			if inVirtual {
				group = append(group, strings.TrimSpace(line))
			}
		default:
			alt := strings.HasPrefix(line, " |")
			kind, name, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, " |")), ": ")
			if !ok {
				return nil, fmt.Errorf("apt-cache depends: unexpected line %q", line)
			}
			if !pendingAlt {
				flush()
			}
			pendingAlt, inVirtual = alt, false
			if kind != "Depends" && kind != "PreDepends" {
				continue
			}
			if strings.HasPrefix(name, "<") {
				inVirtual = true
				continue
			}
			group = append(group, name)
		}
	}
	flush()
	return deps, sc.Err()
}

// Unpack fetches the given packages (unless their files are in the pool
// already) and unpacks each, returning the unpacked folders in the order
// of pkgs.
func (p *DebianPool) Unpack(ctx context.Context, pkgs []string) ([]string, error) {
	files, err := p.packageFiles(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	debs := filepath.Join(p.Dir, "debs")
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return nil, err
	}
	var missing []string
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(debs, files[pkg])); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) > 0 {
		if err := p.download(ctx, debs, missing, files); err != nil {
			return nil, err
		}
	}
	var dirs []string
	for _, pkg := range pkgs {
		dir := filepath.Join(p.Dir, "unpacked", strings.TrimSuffix(files[pkg], ".deb"))
		dirs = append(dirs, dir)
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		tmp := dir + ".tmp"
		os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, err
		}
		if _, err := p.run(ctx, "", "dpkg-deb", "-x", filepath.Join(debs, files[pkg]), tmp); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("unpacking %s: %w", pkg, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

// packageFiles maps each package to the file name of its candidate
// version in the archive (the base of its Filename field).
func (p *DebianPool) packageFiles(ctx context.Context, pkgs []string) (map[string]string, error) {
	out, err := p.run(ctx, "", "apt-cache", append([]string{"show", "--no-all-versions"}, pkgs...)...)
	if err != nil {
		return nil, fmt.Errorf("looking up Debian packages: %w", err)
	}
	files := map[string]string{}
	var pkg string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Package: "); ok {
			pkg = v
		}
		if v, ok := strings.CutPrefix(line, "Filename: "); ok && pkg != "" {
			files[pkg] = path.Base(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, pkg := range pkgs {
		if files[pkg] == "" {
			return nil, fmt.Errorf("apt-cache show gave no file for the Debian package %s", pkg)
		}
	}
	return files, nil
}

// download fetches packages with apt-get download into a fresh folder,
// then moves each file into debs under its archive file name.
func (p *DebianPool) download(ctx context.Context, debs string, pkgs []string, files map[string]string) error {
	tmp, err := os.MkdirTemp(debs, ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// As root into a folder of root's: apt's sandbox user could not write there.
	if _, err := p.run(ctx, tmp, "apt-get", append([]string{"download", "-q", "-o", "APT::Sandbox::User=root"}, pkgs...)...); err != nil {
		return fmt.Errorf("downloading Debian packages: %w", err)
	}
	got, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil {
		return err
	}
	for _, f := range got {
		name, err := p.run(ctx, "", "dpkg-deb", "-f", f, "Package")
		if err != nil {
			return err
		}
		pkg := strings.TrimSpace(string(name))
		if files[pkg] == "" {
			return fmt.Errorf("apt-get download gave %s, a package not asked for", filepath.Base(f))
		}
		if err := os.Rename(f, filepath.Join(debs, files[pkg])); err != nil {
			return err
		}
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(debs, files[pkg])); err != nil {
			return fmt.Errorf("apt-get download did not fetch %s", pkg)
		}
	}
	return nil
}

// Files fetches and unpacks the packages roots need (Resolve) and returns
// their files as image files, at the paths the packages install them to,
// without documentation (debianSkipped). A path two packages ship is
// taken from the later one in sorted order.
func (p *DebianPool) Files(ctx context.Context, roots []string) ([]ImageFile, error) {
	pkgs, err := p.Resolve(ctx, roots)
	if err != nil {
		return nil, err
	}
	dirs, err := p.Unpack(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	return treeFiles(dirs...)
}

// treeFiles lists the folders, files and symbolic links under each root
// as image files at their path relative to that root, later roots winning
// over earlier ones, leaving out debianSkipped.
func treeFiles(roots ...string) ([]ImageFile, error) {
	byPath := map[string]ImageFile{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil || rel == "." {
				return err
			}
			imgPath := "/" + filepath.ToSlash(rel)
			for _, skip := range debianSkipped {
				if imgPath == skip || strings.HasPrefix(imgPath, skip+"/") {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			f := ImageFile{Path: imgPath, Mode: info.Mode()}
			switch {
			case d.IsDir():
				f.Kind = Directory
			case d.Type()&fs.ModeSymlink != 0:
				if f.Target, err = os.Readlink(p); err != nil {
					return err
				}
				f.Kind = Symlink
			case d.Type().IsRegular():
				f.Source = p
			default:
				return nil // no devices or pipes in packages
			}
			byPath[imgPath] = f
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", root, err)
		}
	}
	var files []ImageFile
	for _, k := range slices.Sorted(maps.Keys(byPath)) {
		files = append(files, byPath[k])
	}
	if len(files) == 0 {
		return nil, errors.New("the packages hold no files")
	}
	return files, nil
}
