package discovery

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestTokenDiscoveryStopsReadingAHugeClusterInfo: a machine in the middle
// answers the first, unverified read of cluster-info with a body that
// does not end. Discovery reads about boundedread.MaxUnverified of it,
// hangs up, and fails at once with an error naming the limit, its memory
// bounded by the limit rather than by what the server sends.
func TestTokenDiscoveryStopsReadingAHugeClusterInfo(t *testing.T) {
	// What the server sends at most: a client without a limit would take
	// all of it (and several times as much memory), on every attempt.
	const most = 48 << 20
	f := newFakeAPI(t, nil)
	written := make(chan int64, 1)
	f.handlers[clusterInfoP] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		m, _ := io.WriteString(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cluster-info","namespace":"kube-public"},"data":{"kubeconfig":"`)
		n := int64(m)
		chunk := bytes.Repeat([]byte("A"), 64<<10) // streamed, never held whole
		for n < most {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break // the client hung up
			}
		}
		select {
		case written <- n: // the first answer's count
		default:
		}
	}
	var read atomic.Int64
	d := f.discoverer(t, newFakeClock())
	dial := d.DialContext
	d.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &read}, nil
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := d.Token(context.Background(), TokenOptions{Endpoint: f.endpoint(), Token: token, CACertHashes: []string{f.pin()}, Timeout: 6 * time.Second})
	runtime.ReadMemStats(&after)

	if !errors.Is(err, boundedread.ErrTooLarge) || !strings.Contains(err.Error(), "2 MiB") || !strings.Contains(err.Error(), clusterInfoP) {
		t.Fatalf("error %v, want one naming the read of cluster-info and the limit of 2 MiB", err)
	}
	t.Logf("error: %v", err)
	if n := f.clusterInfoReads(); n != 1 {
		t.Errorf("%d reads of cluster-info; an answer over the limit is not worth asking for again", n)
	}
	if got, bound := read.Load(), boundedread.MaxUnverified+1<<20; got > bound {
		t.Errorf("read %d bytes from the server, want at most about the limit (%d)", got, bound)
	}
	// The client's own buffers grow to the limit, doubling on the way;
	// without a limit they grow to what the server sends, several times.
	if alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(16<<20); alloc > bound {
		t.Errorf("allocated %d bytes while reading, want less than %d", alloc, bound)
	}
	select {
	case n := <-written:
		if n >= most {
			t.Errorf("the server could write all of its %d bytes", n)
		}
		t.Logf("the server wrote %d bytes before the client hung up; the client read %d", n, read.Load())
	case <-time.After(20 * time.Second):
		t.Error("the server is still writing: the client did not hang up")
	}
}

// TestFileDiscoveryRedirects: an https discovery file is read only from
// the host asked for, over https; the status must be 200.
func TestFileDiscoveryRedirects(t *testing.T) {
	f := newFakeAPI(t, func(int) (int, any) { return status(404, metav1.StatusReasonNotFound) })
	data, err := clientcmd.Write(*discoveryFile(f, f.caPEM, ""))
	if err != nil {
		t.Fatal(err)
	}
	var plainReads atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainReads.Add(1)
		_, _ = w.Write(data)
	}))
	defer plain.Close()
	_, plainPort, _ := net.SplitHostPort(plain.Listener.Addr().String())
	_, tlsPort, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	f.files["/discovery.conf"] = data

	pool := x509.NewCertPool()
	pool.AddCert(f.srv.Certificate())
	d := f.discoverer(t, newFakeClock())
	d.RootCAs = pool
	// example.com and 127.0.0.1 are both names of the TLS server (both in
	// httptest's certificate); plain.example is the plain http one.
	d.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		to := f.srv.Listener.Addr().String()
		if host == "plain.example" {
			to = plain.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}
	redirect := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
	}
	f.handlers["/to-http"] = redirect("http://plain.example:" + plainPort + "/discovery.conf")
	f.handlers["/to-other-host"] = redirect("https://127.0.0.1:" + tlsPort + "/discovery.conf")
	f.handlers["/to-other-port"] = redirect("https://example.com:" + plainPort + "/discovery.conf")
	f.handlers["/same-host"] = redirect("/discovery.conf")
	f.handlers["/missing"] = http.NotFound

	tests := []struct {
		path     string
		wantErr  error
		wantText string
	}{
		{path: "/same-host"},
		{path: "/to-http", wantErr: redirectpolicy.ErrRefused, wantText: "not https"},
		{path: "/to-other-host", wantErr: redirectpolicy.ErrRefused, wantText: "another host"},
		{path: "/to-other-port", wantErr: redirectpolicy.ErrRefused, wantText: "another host"},
		{path: "/missing", wantText: "HTTP status 404"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			before, plainBefore := len(f.requests()), plainReads.Load()
			got, err := d.File(context.Background(), "https://"+f.endpoint()+tt.path, time.Minute)
			var fileReads int
			for _, r := range f.requests()[before:] {
				if r.path == "/discovery.conf" {
					fileReads++
				}
			}
			if tt.wantErr == nil && tt.wantText == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Clusters["given"] == nil || fileReads != 1 {
					t.Errorf("kubeconfig %+v after %d reads of the file, want the file's", got, fileReads)
				}
				return
			}
			if err == nil {
				t.Fatalf("discovery succeeded with %+v", got.Clusters)
			}
			t.Logf("error: %v", err)
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantText) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not contain %q and the URL asked for", err, tt.wantText)
			}
			if plain := plainReads.Load() - plainBefore; fileReads != 0 || plain != 0 {
				t.Errorf("the file was read after all (%d times over https, %d over http)", fileReads, plain)
			}
		})
	}
}
