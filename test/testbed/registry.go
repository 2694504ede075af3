package testbed

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Registry serves the images of some archives (WriteArchive) read-only
// over the registry API (OCI distribution: /v2/<name>/manifests/<tag or
// digest>, /v2/<name>/blobs/<digest>), so that a node's containerd, told
// to use it as a mirror of registry.k8s.io, can pull what it would
// otherwise pull from the Internet: a Pod whose pull policy is Always
// still starts. Blobs are read from the archives where they lie.
type Registry struct {
	// manifests maps a full reference (registry.k8s.io/pause:3.10.2) to
	// its manifest's digest.
	manifests map[string]string
	blobs     map[string]blobAt
}

// blobAt is where a blob lies in an archive.
type blobAt struct {
	archive      string
	offset, size int64
}

// NewRegistry reads the index and finds the blobs of each archive.
func NewRegistry(archives []string) (*Registry, error) {
	r := &Registry{manifests: map[string]string{}, blobs: map[string]blobAt{}}
	for _, a := range archives {
		if err := r.add(a); err != nil {
			return nil, fmt.Errorf("registry: archive %s: %w", a, err)
		}
	}
	return r, nil
}

// countingReader keeps the offset in a file read through it: right
// after tar.Reader.Next, the offset of the entry's data. It seeks, so
// the tar reader skips over data instead of reading it.
type countingReader struct {
	f *os.File
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Seek(offset int64, whence int) (int64, error) {
	n, err := c.f.Seek(offset, whence)
	if err == nil {
		c.n = n
	}
	return n, err
}

func (r *Registry) add(archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	cr := &countingReader{f: f}
	tr := tar.NewReader(cr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case hdr.Name == "index.json":
			var index struct {
				Manifests []descriptor `json:"manifests"`
			}
			if err := json.NewDecoder(tr).Decode(&index); err != nil {
				return fmt.Errorf("index.json: %w", err)
			}
			for _, m := range index.Manifests {
				if ref := m.Annotations[annotationImageName]; ref != "" {
					r.manifests[ref] = m.Digest
				}
			}
		case strings.HasPrefix(hdr.Name, "blobs/sha256/") && hdr.Typeflag == tar.TypeReg:
			r.blobs["sha256:"+strings.TrimPrefix(hdr.Name, "blobs/sha256/")] = blobAt{archive: archive, offset: cr.n, size: hdr.Size}
		}
	}
}

// ServeHTTP answers the read-only part of the registry API. The registry
// a request is for comes from containerd's "ns" parameter (a mirror is
// asked with ?ns=registry.k8s.io), registry.k8s.io without it.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	p := strings.TrimPrefix(req.URL.Path, "/v2/")
	if p == "" || p == req.URL.Path {
		if req.URL.Path == "/v2/" || req.URL.Path == "/v2" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, req)
		return
	}
	host := req.URL.Query().Get("ns")
	if host == "" {
		host = "registry.k8s.io"
	}
	var name, kind, ref string
	for _, k := range []string{"/manifests/", "/blobs/"} {
		if i := strings.LastIndex(p, k); i > 0 {
			name, kind, ref = p[:i], strings.Trim(k, "/"), p[i+len(k):]
			break
		}
	}
	digest := ref
	if kind == "manifests" && !strings.HasPrefix(ref, "sha256:") {
		digest = r.manifests[host+"/"+name+":"+ref]
	}
	at, ok := r.blobs[digest]
	if kind == "" || digest == "" || !ok {
		http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not in the test bed's archives"}]}`, http.StatusNotFound)
		return
	}
	contentType := "application/octet-stream"
	if kind == "manifests" {
		contentType = mediaTypeManifest
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Content-Length", strconv.FormatInt(at.size, 10))
	if req.Method == http.MethodHead {
		return
	}
	f, err := os.Open(at.archive)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	_, _ = io.Copy(w, io.NewSectionReader(f, at.offset, at.size))
}

// registryHostsFile is containerd's hosts.toml for a registry host: try
// the test bed's registry (plain HTTP) before the real one.
func registryHostsFile(host, mirror string) string {
	return fmt.Sprintf(`server = "https://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, host, mirror)
}

// writeRegistryHosts writes, under dir (containerd's config_path), the
// hosts.toml that sends pulls from host to mirror first.
func writeRegistryHosts(dir, host, mirror string) error {
	d := filepath.Join(dir, host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(registryHostsFile(host, mirror)), 0o644)
}

// registryPort is where the cluster's registry listens, at the bridge's
// address in the hub.
const registryPort = 5000

func (c *Cluster) registryAddr() string {
	return netip.AddrPortFrom(gatewayAddr, registryPort).String()
}

// ensureRegistry starts "testbed registry" in the hub, serving the
// cluster's archives, unless it runs.
func (c *Cluster) ensureRegistry(ctx context.Context) error {
	return c.startHubProcess(ctx, "registry", append([]string{c.registryAddr()}, c.Archives...))
}

// ServeRegistry indexes archives, listens on addr, writes "ready" and a
// newline to ready (when not nil) and serves them until the listener
// fails: the "testbed registry" command, run in a cluster's hub.
func ServeRegistry(addr string, archives []string, ready io.WriteCloser) error {
	r, err := NewRegistry(archives)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if ready != nil {
		fmt.Fprintln(ready, "ready")
		ready.Close()
	}
	return http.Serve(ln, r)
}
