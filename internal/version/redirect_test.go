package version

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// TestResolveRedirects: a label lookup over https may be redirected to
// another https host (dl.k8s.io sends to its CDN), never to plain http.
func TestResolveRedirects(t *testing.T) {
	var plainReads atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainReads.Add(1)
		fmt.Fprint(w, "v1.36.9")
	}))
	t.Cleanup(plain.Close)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "v1.36.3")
	}))
	t.Cleanup(cdn.Close)
	dl := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/release/stable-1.36.txt":
			http.Redirect(w, r, cdn.URL+r.URL.Path, http.StatusFound)
		case "/release/latest-1.36.txt":
			http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(dl.Close)

	// The test servers share one certificate, which dl's client trusts.
	r, warn, _ := testResolver(t, dl.Client())
	r.BaseURL = dl.URL
	r.ClientVersion = "v1.36.3"
	if got, err := r.Resolve(context.Background(), "stable-1.36"); err != nil || got != "v1.36.3" {
		t.Errorf("redirected to another https host: %q, %v; want v1.36.3", got, err)
	}
	// A refused redirect is a failed lookup: as without network, the
	// binary's own version is used, with a warning that says why.
	got, err := r.Resolve(context.Background(), "latest-1.36")
	if err != nil || got == "v1.36.9" {
		t.Errorf("redirected to http: %q, %v; want the binary's own version", got, err)
	}
	if w := strings.Join(warn.all(), "\n"); !strings.Contains(w, redirectpolicy.ErrRefused.Error()) || !strings.Contains(w, "not https") {
		t.Errorf("warnings %q do not say the redirect was refused", w)
	}
	if n := plainReads.Load(); n != 0 {
		t.Errorf("the http server was asked %d times", n)
	}
}

// TestResolveOversizedAnswer: an answer larger than a version file can be
// is an error naming the URL and the limit, read no further.
func TestResolveOversizedAnswer(t *testing.T) {
	srv := labelServer(t, map[string]string{"/release/stable-1.txt": strings.Repeat("v", 1<<20)})
	r, _, _ := testResolver(t, srv.Client())
	r.BaseURL = srv.URL
	_, err := r.Resolve(context.Background(), "stable-1")
	if !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), srv.URL+"/release/stable-1.txt") || !strings.Contains(err.Error(), "4 KiB") {
		t.Errorf("error %v, want one naming the URL and the limit", err)
	}
}
