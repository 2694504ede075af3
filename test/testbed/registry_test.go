package testbed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistry checks that the registry serves, as containerd asks a
// mirror, the manifest of a tag of an archive, the manifest by digest and
// the blobs it names, byte for byte, and answers 404 for the rest.
func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	base := Image{Ref: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", Also: []string{"registry.k8s.io/e2e-test-images/agnhost:2.55"},
		Files: []ImageFile{{Path: "/agnhost", Data: []byte("agnhost")}}}
	kitten := Image{Ref: "registry.k8s.io/e2e-test-images/kitten:1.8", Parent: &base,
		Files: []ImageFile{{Path: "/kitten.jpg", Data: []byte(strings.Repeat("k", 5000))}}}
	a, err := WriteArchiveSet(dir, base, kitten)
	if err != nil {
		t.Fatal(err)
	}
	b, err := WriteArchiveSet(filepath.Join(dir, "b"), Image{Ref: "registry.k8s.io/pause:3.10.2", Files: []ImageFile{{Path: "/pause", Data: []byte("pause")}}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRegistry([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()
	get := func(method, path string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, body
	}
	if code, _, _ := get("GET", "/v2/"); code != http.StatusOK {
		t.Errorf("/v2/: %d", code)
	}
	code, hdr, body := get("GET", "/v2/e2e-test-images/kitten/manifests/1.8?ns=registry.k8s.io")
	if code != http.StatusOK || hdr.Get("Content-Type") != mediaTypeManifest {
		t.Fatalf("kitten's manifest: %d %v", code, hdr)
	}
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if hdr.Get("Docker-Content-Digest") != digest {
		t.Errorf("digest header %s, content %s", hdr.Get("Docker-Content-Digest"), digest)
	}
	if code, hdr, body := get("HEAD", "/v2/e2e-test-images/kitten/manifests/"+digest+"?ns=registry.k8s.io"); code != http.StatusOK || len(body) != 0 || hdr.Get("Docker-Content-Digest") != digest {
		t.Errorf("HEAD by digest: %d %v", code, hdr)
	}
	var m struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, d := range append(m.Layers, m.Config) {
		code, _, blob := get("GET", "/v2/e2e-test-images/kitten/blobs/"+d.Digest+"?ns=registry.k8s.io")
		got := sha256.Sum256(blob)
		if code != http.StatusOK || "sha256:"+hex.EncodeToString(got[:]) != d.Digest || int64(len(blob)) != d.Size {
			t.Errorf("blob %s: %d, %d bytes", d.Digest, code, len(blob))
		}
	}
	for _, p := range []string{
		"/v2/e2e-test-images/agnhost/manifests/2.55?ns=registry.k8s.io",
		"/v2/pause/manifests/3.10.2", // no ns: registry.k8s.io
	} {
		if code, _, _ := get("HEAD", p); code != http.StatusOK {
			t.Errorf("HEAD %s: %d", p, code)
		}
	}
	for _, p := range []string{
		"/v2/e2e-test-images/kitten/manifests/1.9?ns=registry.k8s.io",
		"/v2/e2e-test-images/kitten/manifests/1.8?ns=gcr.io",
		"/v2/e2e-test-images/kitten/blobs/sha256:" + strings.Repeat("0", 64),
		"/v3/",
	} {
		if code, _, _ := get("GET", p); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	if code, _, _ := get("PUT", "/v2/x/blobs/uploads/"); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", code)
	}
	if _, err := NewRegistry([]string{filepath.Join(dir, "missing.tar")}); err == nil {
		t.Errorf("a missing archive was accepted")
	}
	if err := writeRegistryHosts(dir, "registry.k8s.io", "10.199.0.1:5000"); err != nil {
		t.Fatal(err)
	}
	hosts, _ := os.ReadFile(filepath.Join(dir, "registry.k8s.io", "hosts.toml"))
	if !strings.Contains(string(hosts), `[host."http://10.199.0.1:5000"]`) || !strings.Contains(string(hosts), `server = "https://registry.k8s.io"`) {
		t.Errorf("hosts.toml:\n%s", hosts)
	}
}
