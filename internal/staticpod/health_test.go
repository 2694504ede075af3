package staticpod

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez" {
			w.Write([]byte("ok"))
			return
		}
		http.Error(w, "[-]etcd failed", http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := ProbeClient() // the test server's certificate is self-signed
	if err := Probe(context.Background(), c, srv.URL+"/livez"); err != nil {
		t.Errorf("healthy endpoint: %v", err)
	}
	err := Probe(context.Background(), c, srv.URL+"/readyz")
	if err == nil || !strings.Contains(err.Error(), "HTTP 500: [-]etcd failed") {
		t.Errorf("unhealthy endpoint: %v", err)
	}
}
