package testbed

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// TestImages are the images upstream's e2e suite runs, made here for one
// Kubernetes version (docs/conformance.md says how each is made).
type TestImages struct {
	// Archives are to be imported into every node, beside the toolchain's.
	Archives []string
	// Made are the references the archives publish.
	Made []string
	// NotMade are the references "e2e.test --list-images" printed that no
	// archive publishes (and the toolchain's images do not have either).
	NotMade []string
}

// testImageMakers make the images of the e2e suite, by repository (the
// reference without its tag): one image for all the tags the suite asks
// for. A repository missing here is not made.
var testImageMakers = map[string]func(m *imageMaker, ref string) (Image, error){
	"registry.k8s.io/e2e-test-images/agnhost":           (*imageMaker).agnhost,
	"registry.k8s.io/e2e-test-images/busybox":           (*imageMaker).busybox,
	"registry.k8s.io/e2e-test-images/nginx":             (*imageMaker).nginx,
	"registry.k8s.io/e2e-test-images/glibc-dns-testing": (*imageMaker).glibcDNSTesting,
	"registry.k8s.io/e2e-test-images/kitten":            (*imageMaker).updateDemo,
	"registry.k8s.io/e2e-test-images/nautilus":          (*imageMaker).updateDemo,
	"registry.k8s.io/e2e-test-images/nonewprivs":        (*imageMaker).nonewprivs,
	"registry.k8s.io/e2e-test-images/sample-apiserver":  (*imageMaker).sampleAPIServer,
	"registry.k8s.io/pause":                             (*imageMaker).pause,
}

// testImageArchive names the archive a repository's image goes into:
// the images made on agnhost's layer share one archive, so a node reads
// that layer once.
func testImageArchive(repository string) string {
	switch path.Base(repository) {
	case "kitten", "nautilus":
		return "registry.k8s.io/e2e-test-images/agnhost"
	}
	return repository
}

// imageRepository is a reference without its tag.
func imageRepository(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// TestImages writes the archives of the images "e2e.test --list-images"
// of t's version lists that the test bed can make, into
// .cache/images/<version>/e2e, skipping those among t.Images (kubeadm's
// etcd and pause are imported anyway). The suite programs must be built
// (BuildSuites). Debian packages are kept in .cache/debian.
func (t *Toolchain) TestImages(ctx context.Context, out io.Writer) (*TestImages, error) {
	start := time.Now()
	list, err := exec.CommandContext(ctx, t.SuiteProgram("e2e.test"), "--list-images").Output()
	if err != nil {
		return nil, fmt.Errorf("e2e.test --list-images: %w", err)
	}
	src, err := t.suiteSources(ctx)
	if err != nil {
		return nil, err
	}
	m := &imageMaker{ctx: ctx, pool: NewDebianPool(filepath.Join(t.Repo, ".cache", "debian")),
		sources: filepath.Join(src, "test", "images"), programs: map[string]string{
			"agnhost": t.SuiteProgram("agnhost"), "nonewprivs": t.SuiteProgram("nonewprivs"),
			"sample-apiserver": t.SuiteProgram("sample-apiserver"), "pause": t.Pause,
			"coredns": upstreamBinary(t.Repo, t.KubernetesVersion, "coredns"),
		}, memo: map[string][]ImageFile{}}
	ti := &TestImages{}
	tags := map[string][]string{}
	for _, ref := range strings.Fields(string(list)) {
		repo := imageRepository(ref)
		switch {
		case slices.Contains(t.Images, ref):
		case testImageMakers[repo] == nil:
			ti.NotMade = append(ti.NotMade, ref)
		default:
			tags[repo] = append(tags[repo], ref)
		}
	}
	archives := map[string][]Image{}
	for _, repo := range slices.Sorted(maps.Keys(tags)) {
		refs := tags[repo]
		slices.Sort(refs)
		img, err := testImageMakers[repo](m, refs[0])
		if err != nil {
			return nil, fmt.Errorf("test image %s: %w", refs[0], err)
		}
		img.Also = refs[1:]
		a := testImageArchive(repo)
		archives[a] = append(archives[a], img)
		ti.Made = append(ti.Made, refs...)
	}
	dir := filepath.Join(t.Repo, ".cache", "images", t.KubernetesVersion, "e2e")
	for _, a := range slices.Sorted(maps.Keys(archives)) {
		p, err := WriteArchiveSet(dir, archives[a]...)
		if err != nil {
			return nil, err
		}
		ti.Archives = append(ti.Archives, p)
	}
	fmt.Fprintf(out, "[testbed] %d test images of %s ready in %.1fs (%d listed images not made)\n",
		len(ti.Made), t.KubernetesVersion, time.Since(start).Seconds(), len(ti.NotMade))
	return ti, nil
}

// imageMaker makes test images from built programs, files of Kubernetes'
// sources and Debian packages.
type imageMaker struct {
	ctx  context.Context
	pool *DebianPool
	// sources is test/images of the k8s.io/kubernetes module.
	sources string
	// programs: agnhost, nonewprivs, sample-apiserver, pause, coredns.
	programs map[string]string
	// memo keeps file sets made once and shared by several images.
	memo map[string][]ImageFile
}

// debian returns the files of the packages roots need (DebianPool.Files),
// once per set of roots.
func (m *imageMaker) debian(roots ...string) ([]ImageFile, error) {
	key := "debian " + strings.Join(roots, " ")
	if files, ok := m.memo[key]; ok {
		return files, nil
	}
	files, err := m.pool.Files(m.ctx, roots)
	if err != nil {
		return nil, err
	}
	m.memo[key] = files
	return files, nil
}

// program is a built program as an image file at p.
func (m *imageMaker) program(name, p string) (ImageFile, error) {
	src := m.programs[name]
	if _, err := os.Stat(src); err != nil {
		return ImageFile{}, fmt.Errorf("%s is not built: %w", name, err)
	}
	return ImageFile{Path: p, Source: src, Mode: 0o755}, nil
}

// withBusybox adds, to files holding Debian's busybox, a link for
// each of its applets where Alpine has them ("busybox --list-full":
// /bin/sh, /sbin/sysctl, /usr/bin/wget...), or all in /bin as the busybox
// image has them, except where files holds a program of that name in any
// folder of PATH (Alpine's packages replace busybox's applets the same
// way).
func (m *imageMaker) withBusybox(files []ImageFile, allInBin bool) ([]ImageFile, error) {
	var busybox string
	programs := map[string]bool{}
	for _, f := range files {
		if f.Path == "/bin/busybox" {
			busybox = f.Source
		}
		if f.Kind != Directory && slices.Contains([]string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"}, path.Dir(f.Path)) {
			programs[path.Base(f.Path)] = true
		}
	}
	if busybox == "" {
		return nil, fmt.Errorf("no /bin/busybox among the image's files")
	}
	out, err := exec.CommandContext(m.ctx, busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %w", err)
	}
	files = slices.Clone(files)
	for _, applet := range strings.Fields(string(out)) {
		p := "/" + applet
		if programs[path.Base(p)] || path.Base(p) == "busybox" {
			continue
		}
		if allInBin {
			p = "/bin/" + path.Base(p)
		}
		files = append(files, ImageFile{Path: p, Kind: Symlink, Target: "/bin/busybox"})
	}
	return files, nil
}

// alpineUsers are the users and groups of the Alpine and busybox images
// the test images start from (what specs that look up users find).
const (
	alpinePasswd = `root:x:0:0:root:/root:/bin/sh
bin:x:1:1:bin:/bin:/sbin/nologin
daemon:x:2:2:daemon:/sbin:/sbin/nologin
lp:x:4:7:lp:/var/spool/lpd:/sbin/nologin
sync:x:5:0:sync:/sbin:/bin/sync
shutdown:x:6:0:shutdown:/sbin:/sbin/shutdown
halt:x:7:0:halt:/sbin:/sbin/halt
mail:x:8:12:mail:/var/mail:/sbin/nologin
news:x:9:13:news:/usr/lib/news:/sbin/nologin
operator:x:11:0:operator:/root:/sbin/nologin
ftp:x:21:21::/var/lib/ftp:/sbin/nologin
www-data:x:82:82:Linux User,,,:/home/www-data:/sbin/nologin
nobody:x:65534:65534:nobody:/:/sbin/nologin
`
	alpineGroup = `root:x:0:root
bin:x:1:root,bin,daemon
daemon:x:2:root,bin,daemon
sys:x:3:root,bin
adm:x:4:root,daemon
tty:x:5:
disk:x:6:root
lp:x:7:lp
wheel:x:10:root
mail:x:12:mail
news:x:13:news
floppy:x:19:root
audio:x:18:
ftp:x:21:
users:x:100:games
www-data:x:82:
nogroup:x:65533:
nobody:x:65534:
`
)

// baseFiles are the folders and files every test image has besides its
// programs: /etc/passwd and /etc/group (Alpine's plus extra lines), how
// glibc programs look up names, a /tmp anyone may write to, /root.
func baseFiles(passwd, group string) []ImageFile {
	return []ImageFile{
		{Path: "/etc/passwd", Data: []byte(passwd), Mode: 0o644},
		{Path: "/etc/group", Data: []byte(group), Mode: 0o644},
		{Path: "/etc/nsswitch.conf", Data: []byte("passwd: files\ngroup: files\nhosts: files dns\n"), Mode: 0o644},
		{Path: "/tmp", Kind: Directory, Mode: os.ModeSticky | 0o777},
		{Path: "/root", Kind: Directory, Mode: 0o700},
		{Path: "/home", Kind: Directory, Mode: 0o755},
		{Path: "/run", Kind: Directory, Mode: 0o755},
		{Path: "/var/tmp", Kind: Directory, Mode: os.ModeSticky | 0o777},
	}
}

// agnhostFiles are the agnhost image's files, made as its Dockerfile
// makes it on Alpine: the agnhost program and its "agnhost-2" link,
// porter's certificate and key at /localhost.crt and /localhost.key, an
// /uploads folder, a user and group defined in the image, a CoreDNS
// program at /coredns, and the tools specs run in it: busybox's applets
// (sh, ls, cat...) and, from Debian, bash, nc (OpenBSD's), curl, ip and
// ss, dig and nslookup, iperf, ipcs and getent (Alpine's musl-utils). Debian's busybox, not
// busybox-static: the static one's sh runs its own applets before any
// program of PATH, so "nc -v" would reach busybox's nc, which refuses -v.
func (m *imageMaker) agnhostFiles() ([]ImageFile, error) {
	if files, ok := m.memo["agnhost"]; ok {
		return files, nil
	}
	files, err := m.debian("busybox", "bash", "netcat-openbsd", "curl", "iproute2", "bind9-dnsutils", "iperf", "util-linux", "libc-bin")
	if err != nil {
		return nil, err
	}
	// What Debian's maintainer scripts and the Dockerfile would link; before
	// busybox's applets, which must not shadow them.
	files = append(slices.Clone(files),
		ImageFile{Path: "/bin/nc", Kind: Symlink, Target: "nc.openbsd"},
		ImageFile{Path: "/usr/local/bin/iperf", Kind: Symlink, Target: "/usr/bin/iperf"})
	if files, err = m.withBusybox(files, false); err != nil {
		return nil, err
	}
	agnhost, err := m.program("agnhost", "/agnhost")
	if err != nil {
		return nil, err
	}
	coredns, err := m.program("coredns", "/coredns")
	if err != nil {
		return nil, err
	}
	files = append(files, baseFiles(
		alpinePasswd+"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n",
		alpineGroup+"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")...)
	files = append(files, agnhost, coredns,
		ImageFile{Path: "/agnhost-2", Kind: Symlink, Target: "agnhost"},
		ImageFile{Path: "/localhost.crt", Source: filepath.Join(m.sources, "agnhost", "porter", "localhost.crt"), Mode: 0o644},
		ImageFile{Path: "/localhost.key", Source: filepath.Join(m.sources, "agnhost", "porter", "localhost.key"), Mode: 0o644},
		ImageFile{Path: "/uploads", Kind: Directory, Mode: 0o755},
		ImageFile{Path: "/home/user-defined-in-image", Kind: Directory, Mode: 0o755},
	)
	m.memo["agnhost"] = files
	return files, nil
}

// agnhost is the agnhost image (any tag the suite asks for: the one agnhost
// program built from the suite's own sources).
func (m *imageMaker) agnhost(ref string) (Image, error) {
	files, err := m.agnhostFiles()
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, Files: files, Env: []string{imagePath}, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}}, nil
}

// updateDemo is the kitten or nautilus image of kubectl's "Update Demo"
// specs: on the agnhost image's layer, the picture and data.json of its
// sources in /, served by agnhost's test-webserver.
func (m *imageMaker) updateDemo(ref string) (Image, error) {
	name := path.Base(imageRepository(ref))
	agnhost, err := m.agnhost(ref)
	if err != nil {
		return Image{}, err
	}
	html := filepath.Join(m.sources, name, "html")
	return Image{Ref: ref, Parent: &agnhost, Env: []string{imagePath}, Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"},
		Files: []ImageFile{
			{Path: "/" + name + ".jpg", Source: filepath.Join(html, name+".jpg"), Mode: 0o644},
			{Path: "/data.json", Source: filepath.Join(html, "data.json"), Mode: 0o644},
		}}, nil
}

// busyboxFiles are Debian's busybox-static with its applets linked,
// Alpine's users and the base folders; allInBin as withBusybox.
func (m *imageMaker) busyboxFiles(allInBin bool) ([]ImageFile, error) {
	files, err := m.debian("busybox-static")
	if err != nil {
		return nil, err
	}
	if files, err = m.withBusybox(files, allInBin); err != nil {
		return nil, err
	}
	return append(files, baseFiles(alpinePasswd, alpineGroup)...), nil
}

// busybox is the busybox image: Debian's busybox-static with its applets
// linked in /bin, as in the official image, running sh by default.
// Debian's busybox is 1.35, the official image's 1.37: 1.35's sh leaves
// out of what it runs the environment variables whose names are not
// shell names ("data-1"), which four Conformance specs print with
// "sh -c env" (docs/conformance.md).
func (m *imageMaker) busybox(ref string) (Image, error) {
	files, err := m.busyboxFiles(true)
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, Files: files, Env: []string{imagePath}, Cmd: []string{"sh"}}, nil
}

// nonewprivs is the image of the no-new-privileges spec: its nnp program
// (it prints its effective user id) setuid root, on busybox as on Alpine.
func (m *imageMaker) nonewprivs(ref string) (Image, error) {
	files, err := m.busyboxFiles(false)
	if err != nil {
		return Image{}, err
	}
	nnp, err := m.program("nonewprivs", "/usr/local/bin/nnp")
	if err != nil {
		return Image{}, err
	}
	nnp.Mode = os.ModeSetuid | 0o755
	return Image{Ref: ref, Files: append(files, nnp), Env: []string{imagePath}, Cmd: []string{"nnp"}}, nil
}

// nginxConf is the web server's configuration, as the official nginx
// image's: the page in /usr/share/nginx/html on port 80, logs to the
// container's output (through the links in /var/log/nginx), running its
// workers as user nginx.
const nginxConf = `user nginx;
worker_processes auto;
error_log /var/log/nginx/error.log notice;
pid /run/nginx.pid;

events {
    worker_connections 1024;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log /var/log/nginx/access.log;
    sendfile on;
    keepalive_timeout 65;

    server {
        listen 80;
        server_name localhost;
        location / {
            root /usr/share/nginx/html;
            index index.html index.htm;
        }
    }
}
`

// nginx is the nginx image (both tags the suite asks for): Debian's
// nginx with the official image's configuration and user, Debian's
// busybox for a shell and tools (as Alpine's), running "nginx -g 'daemon off;'".
func (m *imageMaker) nginx(ref string) (Image, error) {
	files, err := m.debian("busybox", "nginx")
	if err != nil {
		return Image{}, err
	}
	if files, err = m.withBusybox(files, false); err != nil {
		return Image{}, err
	}
	files = append(files, baseFiles(alpinePasswd+"nginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin\n",
		alpineGroup+"nginx:x:101:nginx\n")...)
	files = append(files,
		ImageFile{Path: "/etc/nginx/nginx.conf", Data: []byte(nginxConf), Mode: 0o644},
		ImageFile{Path: "/usr/share/nginx/html/index.html", Data: []byte("<!DOCTYPE html>\n<html>\n<head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1></body>\n</html>\n"), Mode: 0o644},
		ImageFile{Path: "/var/log/nginx/access.log", Kind: Symlink, Target: "/dev/stdout"},
		ImageFile{Path: "/var/log/nginx/error.log", Kind: Symlink, Target: "/dev/stderr"},
		ImageFile{Path: "/var/lib/nginx", Kind: Directory, Mode: 0o755},
		ImageFile{Path: "/var/cache/nginx", Kind: Directory, Mode: 0o755},
	)
	return Image{Ref: ref, Files: files, Env: []string{imagePath}, Cmd: []string{"nginx", "-g", "daemon off;"}}, nil
}

// glibcDNSTesting is the DNS specs' glibc prober, made as its Dockerfile
// makes it on Debian bookworm-slim: a small Debian system (dash as sh,
// bash, coreutils, grep, sed, getent) with dig from bind9-dnsutils, and
// a CoreDNS program at /coredns; users from base-passwd's master files.
func (m *imageMaker) glibcDNSTesting(ref string) (Image, error) {
	files, err := m.debian("base-files", "base-passwd", "bash", "bind9-dnsutils", "coreutils", "dash",
		"debianutils", "findutils", "grep", "hostname", "libc-bin", "mawk", "sed")
	if err != nil {
		return Image{}, err
	}
	var passwd, group []byte
	for _, f := range files {
		switch f.Path {
		case "/usr/share/base-passwd/passwd.master":
			passwd, err = os.ReadFile(f.Source)
		case "/usr/share/base-passwd/group.master":
			group, err = os.ReadFile(f.Source)
		}
		if err != nil {
			return Image{}, err
		}
	}
	if passwd == nil || group == nil {
		return Image{}, fmt.Errorf("base-passwd holds no passwd.master or group.master")
	}
	coredns, err := m.program("coredns", "/coredns")
	if err != nil {
		return Image{}, err
	}
	files = append(slices.Clone(files), baseFiles(string(passwd), string(group))...)
	files = append(files, coredns,
		// What mawk's maintainer script links.
		ImageFile{Path: "/usr/bin/awk", Kind: Symlink, Target: "mawk"})
	return Image{Ref: ref, Files: files, Env: []string{imagePath}, Cmd: []string{"bash"}}, nil
}

// sampleAPIServer is the aggregator spec's sample API server: the
// k8s.io/sample-apiserver program of the suite's staging version.
func (m *imageMaker) sampleAPIServer(ref string) (Image, error) {
	p, err := m.program("sample-apiserver", "/sample-apiserver")
	if err != nil {
		return Image{}, err
	}
	files := append(baseFiles(alpinePasswd, alpineGroup), p)
	return Image{Ref: ref, Files: files, Env: []string{imagePath}, Entrypoint: []string{"/sample-apiserver"}}, nil
}

// pause is a pause image of a tag kubeadm does not list (the suite's own
// pause tag may differ from the cluster's): the test bed's pause program.
func (m *imageMaker) pause(ref string) (Image, error) {
	p, err := m.program("pause", "/pause")
	if err != nil {
		return Image{}, err
	}
	return Image{Ref: ref, Files: []ImageFile{p}, Env: []string{imagePath}, Entrypoint: []string{"/pause"}}, nil
}
