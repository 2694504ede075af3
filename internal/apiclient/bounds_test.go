package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// TestClientsBoundWhatTheyRead: every client this package makes refuses
// an answer larger than boundedread.MaxAPIResponse and a redirect to
// another host, names the program in its User-Agent, and asks for JSON
// (not client-go's protobuf), whose bodies verbose logs can show.
func TestClientsBoundWhatTheyRead(t *testing.T) {
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect to another host was followed: %s %s", r.Method, r.URL)
	}))
	defer other.Close()
	type request struct{ agent, accept string }
	requests := make(chan request, 16)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requests <- request{r.UserAgent(), r.Header.Get("Accept")}:
		default:
		}
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
	for name, newClient := range clientMakers(t, kubeconfigOf(srv.URL), time.Minute) {
		t.Run(name, func(t *testing.T) {
			c, err := newClient()
			if err != nil {
				t.Fatal(err)
			}
			cms := c.CoreV1().ConfigMaps("kube-system")
			if _, err := cms.Get(context.Background(), "huge", metav1.GetOptions{}); !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
				t.Errorf("reading an answer over the limit: %v", err)
			}
			r := <-requests
			if !strings.HasPrefix(r.agent, "apiclient.test/") {
				t.Errorf("User-Agent %q, want client-go's default, named for the program", r.agent)
			}
			if !strings.HasPrefix(r.accept, "application/json") || strings.Contains(r.accept, "protobuf") {
				t.Errorf("Accept %q, want JSON", r.accept)
			}
			if _, err := cms.Get(context.Background(), "moved", metav1.GetOptions{}); !errors.Is(err, redirectpolicy.ErrRefused) {
				t.Errorf("following a redirect to another host: %v", err)
			}
			<-requests
		})
	}
}
