package kubeclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// TestNewForConfigBoundsWhatItReads: a client from NewForConfig refuses an
// answer larger than boundedread.MaxAPIResponse and a redirect to another
// host.
func TestNewForConfigBoundsWhatItReads(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect to another host was followed: %s %s", r.Method, r.URL)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/configmaps/huge":
			// Declares more than the limit, and sends nothing of it.
			w.Header().Set("Content-Length", strconv.FormatInt(boundedread.MaxAPIResponse+1, 10))
			w.WriteHeader(http.StatusOK)
		case "/api/v1/namespaces/kube-system/configmaps/moved":
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cms := c.CoreV1().ConfigMaps("kube-system")
	if _, err := cms.Get(context.Background(), "huge", metav1.GetOptions{}); !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("reading an answer over the limit: %v", err)
	}
	if _, err := cms.Get(context.Background(), "moved", metav1.GetOptions{}); !errors.Is(err, redirectpolicy.ErrRefused) {
		t.Errorf("following a redirect to another host: %v", err)
	}
}
