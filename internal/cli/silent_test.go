package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// silentHTTPS starts a TLS server that completes the handshake and reads
// requests but never answers one, until the test ends, and returns its
// URL.
func silentHTTPS(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-done
	}))
	srv.StartTLS()
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv.URL
}

// silentTCP starts a server that accepts TCP connections and then says
// nothing, not even the TLS handshake, until the test ends, and returns
// its https URL.
func silentTCP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "https://" + l.Addr().String()
}

// kubeconfigFor writes a kubeconfig for server (its certificate is not
// checked) and returns its path.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.conf")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "` + server + `", insecure-skip-tls-verify: true}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
users:
- name: u
  user: {token: not-a-real-credential}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withinDeadline runs f and fails the test when it has not returned after
// limit; f's error is returned. A command that hangs forever thus fails
// the test instead of the test binary's own timeout.
func withinDeadline(t *testing.T, limit time.Duration, f func() error) error {
	t.Helper()
	res := make(chan error, 1)
	go func() { res <- f() }()
	select {
	case err := <-res:
		return err
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
		return nil
	}
}
