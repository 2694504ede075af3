package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const discoveredServer = "https://cp.example:6443" // cluster-info's server, unlike the endpoint given

func TestTokenDiscovery(t *testing.T) {
	f := newFakeAPI(t, nil)
	_, otherPin := otherCA(t)
	cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret, otherID: otherSecret})
	f.respond = func(int) (int, any) { return 200, cm }
	clock := newFakeClock()

	got, err := f.discoverer(t, clock).Token(context.Background(), TokenOptions{
		Endpoint: f.endpoint(), Token: token, CACertHashes: []string{otherPin, strings.ToUpper(f.pin()[:10]) + f.pin()[10:]},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := clientcmdapi.NewConfig()
	want.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: discoveredServer, CertificateAuthorityData: f.caPEM}
	want.AuthInfos["tls-bootstrap-token-user"] = &clientcmdapi.AuthInfo{Token: token}
	want.Contexts["tls-bootstrap-token-user@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: "tls-bootstrap-token-user"}
	want.CurrentContext = "tls-bootstrap-token-user@kubernetes"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kubeconfig\n got %+v\nwant %+v", got, want)
	}
	// Two anonymous GETs of cluster-info (unverified, then verified), and
	// nothing else; every connection went to the endpoint given.
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Errorf("requests %v, want two reads of cluster-info", reqs)
	}
	for _, r := range reqs {
		if r.method != "GET" || r.path != clusterInfoP || r.auth != "" {
			t.Errorf("request %+v, want an anonymous GET of %s", r, clusterInfoP)
		}
		if !strings.HasPrefix(r.accept, "application/json") || strings.Contains(r.accept, "protobuf") {
			t.Errorf("request %+v asks for another content type than JSON", r)
		}
	}
	for _, addr := range f.dialed {
		if addr != f.endpoint() {
			t.Errorf("dialled %s, want only %s", addr, f.endpoint())
		}
	}
	if len(clock.waits) != 0 {
		t.Errorf("waited %v with a signed cluster-info", clock.waits)
	}
}

func TestTokenDiscoverySignedAfterSomePolls(t *testing.T) {
	f := newFakeAPI(t, nil)
	kc := clusterInfoKubeconfig(t, discoveredServer, f.caPEM)
	unsigned, signed := clusterInfo(t, kc, nil), clusterInfo(t, kc, map[string]string{tokenID: tokenSecret})
	f.respond = func(n int) (int, any) {
		if n <= 3 {
			return 200, unsigned
		}
		return 200, signed
	}
	clock := newFakeClock()
	if _, err := f.discoverer(t, clock).Token(context.Background(), TokenOptions{Endpoint: f.endpoint(), Token: token, CACertHashes: []string{f.pin()}}); err != nil {
		t.Fatal(err)
	}
	if n := f.clusterInfoReads(); n != 5 {
		t.Errorf("%d reads of cluster-info, want 4 unverified and 1 verified", n)
	}
	if want := []time.Duration{DefaultInterval, DefaultInterval, DefaultInterval}; !reflect.DeepEqual(clock.waits, want) {
		t.Errorf("waits %v, want %v", clock.waits, want)
	}
}

// Skipping CA verification without pins trusts the signed cluster-info
// alone: its CA need not be the server's, and there is no second read.
func TestTokenDiscoveryUnsafeSkip(t *testing.T) {
	f := newFakeAPI(t, nil)
	otherPEM, _ := otherCA(t)
	cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, otherPEM), map[string]string{tokenID: tokenSecret})
	f.respond = func(int) (int, any) { return 200, cm }
	got, err := f.discoverer(t, newFakeClock()).Token(context.Background(), TokenOptions{Endpoint: f.endpoint(), Token: token, UnsafeSkipCAVerification: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Clusters[ClusterName]; c.Server != discoveredServer || string(c.CertificateAuthorityData) != string(otherPEM) {
		t.Errorf("cluster %+v", c)
	}
	if n := f.clusterInfoReads(); n != 1 {
		t.Errorf("%d reads of cluster-info, want 1", n)
	}
}

func TestTokenDiscoveryFailures(t *testing.T) {
	otherPEM, otherPin := otherCA(t)
	type setup struct {
		respond func(n int) (int, any)
		opts    TokenOptions
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T, f *fakeAPI) setup
		wantErr   error
		wantText  []string
		wantReads int
	}{{
		name: "the CA matches no pin",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{otherPin}}}
		},
		wantErr:   ErrPinMismatch,
		wantText:  []string{"none of the CA's public keys matches the pins given", otherPin, "the CA in cluster-info has sha256:"},
		wantReads: 1,
	}, {
		name: "pins are checked even when verification may be skipped",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{otherPin}, UnsafeSkipCAVerification: true}}
		},
		wantErr:   ErrPinMismatch,
		wantReads: 1,
	}, {
		name: "signed with another secret",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: wrongSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrBadSignature,
		wantText:  []string{`token ID "abc123"`, "does not verify"},
		wantReads: 1,
	}, {
		name: "kubeconfig changed after signing",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret})
			cm.Data["kubeconfig"] = clusterInfoKubeconfig(t, "https://evil.example:6443", f.caPEM)
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrBadSignature,
		wantReads: 1,
	}, {
		name: "cluster-info differs on the verified read",
		setup: func(t *testing.T, f *fakeAPI) setup {
			first := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{tokenID: tokenSecret})
			second := clusterInfo(t, clusterInfoKubeconfig(t, "https://moved.example:6443", f.caPEM), map[string]string{tokenID: tokenSecret})
			return setup{func(n int) (int, any) {
				if n == 1 {
					return 200, first
				}
				return 200, second
			}, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrChanged,
		wantReads: 2,
	}, {
		name: "the server's certificate is not from the pinned CA",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, otherPEM), map[string]string{tokenID: tokenSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{otherPin}}}
		},
		wantErr:   ErrUntrustedServer,
		wantText:  []string{"certificate"},
		wantReads: 1,
	}, {
		name: "never signed for the token",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, f.caPEM), map[string]string{otherID: otherSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrNotSigned,
		wantText:  []string{"gave up after 5m0s", `"abc123"`, "jws-kubeconfig-abc123"},
		wantReads: 61, // at 0s, 5s, ... 300s
	}, {
		name: "cluster-info missing",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{func(int) (int, any) { return status(404, "NotFound") }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrClusterInfoMissing,
		wantText:  []string{"gave up after 5m0s", "cluster-info ConfigMap does not exist"},
		wantReads: 61,
	}, {
		name: "anonymous reads forbidden",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{func(int) (int, any) { return status(403, "Forbidden") }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrClusterInfoForbidden,
		wantReads: 61,
	}, {
		// Issue 29: a refusal without a message (a proxy in the way) said
		// nothing after "ConfigMap at <server>:".
		name: "forbidden without a message",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{func(int) (int, any) {
				return 403, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden}
			}, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantErr:   ErrClusterInfoForbidden,
		wantText:  []string{`get configmaps "cluster-info" in namespace "kube-public"`, "403 Forbidden", "system:anonymous", "RBAC grants system:anonymous"},
		wantReads: 61,
	}, {
		name: "timeout given",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{func(int) (int, any) { return status(404, "NotFound") }, TokenOptions{CACertHashes: []string{f.pin()}, Timeout: 12 * time.Second}}
		},
		wantErr:   ErrClusterInfoMissing,
		wantText:  []string{"gave up after 12s"},
		wantReads: 4, // at 0s, 5s, 10s, 12s
	}, {
		name: "cluster-info with two clusters",
		setup: func(t *testing.T, f *fakeAPI) setup {
			kc := clusterInfoKubeconfig(t, discoveredServer, f.caPEM) // re-encode with a second cluster
			kc = strings.Replace(kc, "clusters:\n", "clusters:\n- cluster:\n    server: https://second.example:6443\n  name: second\n", 1)
			cm := clusterInfo(t, kc, map[string]string{tokenID: tokenSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{CACertHashes: []string{f.pin()}}}
		},
		wantText:  []string{"2 clusters instead of one"},
		wantReads: 1,
	}, {
		name: "cluster-info without a CA",
		setup: func(t *testing.T, f *fakeAPI) setup {
			cm := clusterInfo(t, clusterInfoKubeconfig(t, discoveredServer, nil), map[string]string{tokenID: tokenSecret})
			return setup{func(int) (int, any) { return 200, cm }, TokenOptions{UnsafeSkipCAVerification: true}}
		},
		wantText:  []string{"no embedded CA certificate"},
		wantReads: 1,
	}, {
		name: "no pins and verification not skipped",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{nil, TokenOptions{}}
		},
		wantText: []string{"needs CA pins"},
	}, {
		name: "malformed pin",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{nil, TokenOptions{CACertHashes: []string{"md5:0123"}}}
		},
		wantText: []string{`"md5:0123"`},
	}, {
		name: "malformed token",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{nil, TokenOptions{Token: tokenID + ":" + tokenSecret, CACertHashes: []string{f.pin()}}}
		},
		wantText: []string{"not of the form"},
	}, {
		name: "endpoint without a port",
		setup: func(t *testing.T, f *fakeAPI) setup {
			return setup{nil, TokenOptions{Endpoint: "example.com", CACertHashes: []string{f.pin()}}}
		},
		wantText: []string{`"example.com" is not host:port`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, nil)
			s := tt.setup(t, f)
			f.respond = s.respond
			opts := s.opts
			if opts.Endpoint == "" {
				opts.Endpoint = f.endpoint()
			}
			if opts.Token == "" {
				opts.Token = token
			}
			_, err := f.discoverer(t, newFakeClock()).Token(context.Background(), opts)
			if err == nil {
				t.Fatal("discovery succeeded")
			}
			t.Logf("error: %v", err)
			noSecret(t, "the error", err.Error())
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %q", err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			// Discovery that gave up made its last attempt at the deadline,
			// with no time left on the fake clock: that attempt gets a
			// millisecond of real time, which on a loaded machine can pass
			// before its request reaches the server.
			n := f.clusterInfoReads()
			cutShort := strings.Contains(err.Error(), "gave up after") && n == tt.wantReads-1
			if n != tt.wantReads && !cutShort {
				t.Errorf("%d reads of cluster-info, want %d", n, tt.wantReads)
			}
		})
	}
}

func TestTokenDiscoveryUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	d := &Discoverer{
		Clock: newFakeClock(),
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, closed)
		},
	}
	_, err = d.Token(context.Background(), TokenOptions{Endpoint: "example.com:6443", Token: token, CACertHashes: []string{"sha256:" + strings.Repeat("ab", 32)}, Timeout: time.Minute})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "gave up after 1m0s") {
		t.Errorf("error %v, want one wrapping %v after 1m0s", err, ErrUnreachable)
	}
	noSecret(t, "the error", err.Error())
}

// The wait between polls never runs past the deadline.
func TestTokenDiscoveryLastWaitIsShort(t *testing.T) {
	f := newFakeAPI(t, func(int) (int, any) { return status(404, "NotFound") })
	clock := newFakeClock()
	d := f.discoverer(t, clock)
	d.Interval = 2 * time.Second
	_, err := d.Token(context.Background(), TokenOptions{Endpoint: f.endpoint(), Token: token, CACertHashes: []string{f.pin()}, Timeout: 3 * time.Second})
	if !errors.Is(err, ErrClusterInfoMissing) {
		t.Fatalf("error %v", err)
	}
	if want := []time.Duration{2 * time.Second, time.Second}; !reflect.DeepEqual(clock.waits, want) {
		t.Errorf("waits %v, want %v", clock.waits, want)
	}
}

// With the real clock and a short timeout, discovery gives up in time.
func TestTokenDiscoveryRealClock(t *testing.T) {
	f := newFakeAPI(t, func(int) (int, any) { return status(404, "NotFound") })
	d := f.discoverer(t, nil)
	d.Interval = 20 * time.Millisecond
	began := time.Now()
	_, err := d.Token(context.Background(), TokenOptions{Endpoint: f.endpoint(), Token: token, CACertHashes: []string{f.pin()}, Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrClusterInfoMissing) {
		t.Fatalf("error %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("gave up after %v", took)
	}
	if n := f.clusterInfoReads(); n < 2 {
		t.Errorf("%d reads of cluster-info, want several", n)
	}
}

func TestTokenDiscoveryCanceled(t *testing.T) {
	f := newFakeAPI(t, func(int) (int, any) { return status(404, "NotFound") })
	ctx, cancel := context.WithCancel(context.Background())
	d := f.discoverer(t, nil)
	d.Interval = time.Hour
	// Cancel once the first attempt has failed and discovery waits for the
	// next one (cancelling when the server sees the first read could cut
	// that read short instead).
	logf := d.Logf
	d.Logf = func(format string, args ...any) {
		logf(format, args...)
		if strings.Contains(fmt.Sprintf(format, args...), "trying again") {
			cancel()
		}
	}
	_, err := d.Token(ctx, TokenOptions{Endpoint: f.endpoint(), Token: token, CACertHashes: []string{f.pin()}})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrClusterInfoMissing) {
		t.Errorf("error %v, want one wrapping the cancellation and the last failure", err)
	}
}

// When the deadline cuts the last attempt short, the error reports the
// failure before it, not the cut.
func TestPollReportsTheFailureBeforeACutShortAttempt(t *testing.T) {
	d := &Discoverer{Interval: time.Hour}
	calls := 0
	err := d.poll(context.Background(), d.deadline(100*time.Millisecond), func(ctx context.Context) (bool, error) {
		calls++
		if calls == 1 {
			return false, ErrClusterInfoMissing
		}
		<-ctx.Done()
		return false, ctx.Err()
	})
	if calls != 2 || !errors.Is(err, ErrClusterInfoMissing) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after %d attempts: %v, want the first attempt's failure", calls, err)
	}
}
