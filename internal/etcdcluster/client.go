package etcdcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// DefaultCertFiles returns where kubeadm keeps, under the certificates
// folder pkiDir (normally /etc/kubernetes/pki), the etcd CA certificate and
// the client certificate and key it talks to etcd with: the API server's
// etcd client pair.
func DefaultCertFiles(pkiDir string) (caFile, certFile, keyFile string) {
	return filepath.Join(pkiDir, "etcd", "ca.crt"),
		filepath.Join(pkiDir, "apiserver-etcd-client.crt"),
		filepath.Join(pkiDir, "apiserver-etcd-client.key")
}

// Config says how to reach the etcd cluster and how long to wait for it.
// The three timeouts must be positive.
type Config struct {
	// Endpoints are client URLs of members (from ClientURLs, for example).
	Endpoints []string
	// CAFile is the CA certificate the members' serving certificates are
	// checked against; CertFile and KeyFile are the client's pair.
	CAFile, CertFile, KeyFile string

	// DialTimeout bounds every connection attempt.
	DialTimeout time.Duration
	// CallTimeout bounds every single request to etcd.
	CallTimeout time.Duration
	// RetryTimeout bounds each operation as a whole, retries included
	// (kubeadm's timeouts.etcdAPICall).
	RetryTimeout time.Duration
	// Backoff is the pause between retries; the zero value means
	// DefaultBackoff().
	Backoff Backoff

	// Dial, when set, opens the connections instead of a plain TCP dial;
	// addr is a host and port. DialTimeout still applies.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Backoff is an exponential back-off: the first pause is Initial, each
// next one twice as long, never longer than Max.
type Backoff struct {
	Initial, Max time.Duration
}

// DefaultBackoff returns the back-off used when Config leaves it unset:
// from 100ms up to 3s.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 100 * time.Millisecond, Max: 3 * time.Second}
}

func (b Backoff) next(d time.Duration) time.Duration {
	if d <= 0 {
		return b.Initial
	}
	d *= 2
	if d > b.Max {
		d = b.Max
	}
	return d
}

// etcdAPI is what this package asks of etcd: a part of etcd's client,
// *clientv3.Client, which unit tests replace.
type etcdAPI interface {
	MemberList(ctx context.Context, opts ...clientv3.OpOption) (*clientv3.MemberListResponse, error)
	MemberAddAsLearner(ctx context.Context, peerAddrs []string) (*clientv3.MemberAddResponse, error)
	MemberPromote(ctx context.Context, id uint64) (*clientv3.MemberPromoteResponse, error)
	MemberRemove(ctx context.Context, id uint64) (*clientv3.MemberRemoveResponse, error)
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	SetEndpoints(endpoints ...string)
	Close() error
}

// Client talks to one etcd cluster. It is safe for concurrent use; Close it
// when done.
type Client struct {
	api          etcdAPI
	endpoints    []string
	callTimeout  time.Duration
	retryTimeout time.Duration
	backoff      Backoff
}

// New checks cfg, loads the certificates and returns a client. It does not
// wait for a connection: the first request does, within CallTimeout.
func New(cfg Config) (*Client, error) {
	api, err := NewV3Client(cfg)
	if err != nil {
		return nil, err
	}
	return newClient(api, cfg), nil
}

// NewV3Client checks cfg, loads the certificates and returns etcd's own
// client for cfg's endpoints, for the requests Client does not offer
// (snapshots, for one). Only the dial settings of cfg apply to it: its
// calls are bounded by the contexts the caller gives them, not by
// CallTimeout or RetryTimeout. Like New it does not wait for a
// connection. The caller closes it.
//
// The client logs nothing (kubeadm's messages say what failed), waits
// for a member to come back at most a couple of seconds between two
// connection attempts (a member that restarts, as an upgrade replaces its
// Pod, is asked again soon rather than after gRPC's default pauses of up
// to two minutes), and remembers the last failure of every call for the
// error of a call that runs out of time (see Bounded).
func NewV3Client(cfg Config) (*clientv3.Client, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	tlsConfig, err := loadTLS(cfg.CAFile, cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	dialTimeout := cfg.DialTimeout
	dial := cfg.Dial
	if dial == nil {
		d := &net.Dialer{}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	boundedDial := func(ctx context.Context, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		return dial(ctx, addr)
	}
	api, err := clientv3.New(clientv3.Config{
		Endpoints:   append([]string(nil), cfg.Endpoints...),
		TLS:         tlsConfig,
		DialTimeout: cfg.DialTimeout,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithContextDialer(boundedDial),
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff(), MinConnectTimeout: dialTimeout}),
			grpc.WithChainUnaryInterceptor(recordAnswers),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	return api, nil
}

// reconnectBackoff paces the attempts to reconnect to a member.
func reconnectBackoff() backoff.Config {
	return backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}
}

// newClient wraps api with cfg's endpoints and timeouts; cfg must be
// checked.
func newClient(api etcdAPI, cfg Config) *Client {
	b := cfg.Backoff
	if b == (Backoff{}) {
		b = DefaultBackoff()
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	return &Client{
		api:          api,
		endpoints:    append([]string(nil), cfg.Endpoints...),
		callTimeout:  cfg.CallTimeout,
		retryTimeout: cfg.RetryTimeout,
		backoff:      b,
	}
}

func (cfg Config) check() error {
	if len(cfg.Endpoints) == 0 {
		return errors.New("no endpoint given")
	}
	for _, e := range cfg.Endpoints {
		if err := CheckURL(e); err != nil {
			return err
		}
	}
	switch {
	case cfg.DialTimeout <= 0:
		return fmt.Errorf("dial timeout %v: must be positive", cfg.DialTimeout)
	case cfg.CallTimeout <= 0:
		return fmt.Errorf("call timeout %v: must be positive", cfg.CallTimeout)
	case cfg.RetryTimeout <= 0:
		return fmt.Errorf("retry timeout %v: must be positive", cfg.RetryTimeout)
	case cfg.Backoff.Initial < 0 || cfg.Backoff.Max < 0:
		return fmt.Errorf("back-off %v..%v: must not be negative", cfg.Backoff.Initial, cfg.Backoff.Max)
	case cfg.Backoff != (Backoff{}) && cfg.Backoff.Initial == 0:
		return errors.New("back-off: the first pause must be positive")
	}
	return nil
}

// loadTLS builds the client's TLS configuration: the CA to check members
// against and the client pair to show them.
func loadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("the CA certificate, client certificate and client key files must all be given")
	}
	caPEM, err := boundedread.ReadFile(caFile, boundedread.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("reading the etcd CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("etcd CA certificate %s: no PEM certificate in it", caFile)
	}
	certPEM, err := boundedread.ReadFile(certFile, boundedread.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("reading the etcd client certificate: %w", err)
	}
	keyPEM, err := boundedread.ReadFile(keyFile, boundedread.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("reading the etcd client key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the etcd client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// Endpoints returns the client URLs the client talks to.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// SyncEndpoints replaces the client's endpoints with the client URLs of
// the cluster's started voting members, as etcd's member list gives them
// (etcdctl's and upstream kubeadm's clients do the same). The etcd static
// Pods the API server shows may name a member that is gone: a
// control-plane node that was reset keeps its mirror Pod until its Node is
// deleted, and its endpoint would fail every health check of a node that
// joins meanwhile, or of that node joining again. The member list is read
// with the client's retries. Call it before the client is shared.
func (c *Client) SyncEndpoints(ctx context.Context) error {
	members, err := c.Members(ctx)
	if err != nil {
		return fmt.Errorf("reading the etcd members at %s: %w", strings.Join(c.endpoints, ","), err)
	}
	var eps []string
	for _, m := range members {
		if m.Started() && !m.IsLearner {
			eps = append(eps, m.ClientURLs...)
		}
	}
	if len(eps) == 0 {
		return fmt.Errorf("the etcd cluster at %s lists no started voting member with a client URL", strings.Join(c.endpoints, ","))
	}
	c.api.SetEndpoints(eps...)
	c.endpoints = eps
	return nil
}

// Close ends the client's connections.
func (c *Client) Close() error {
	if err := c.api.Close(); err != nil {
		return fmt.Errorf("closing the etcd client: %w", err)
	}
	return nil
}

// call runs one request with its own CallTimeout (see Bounded).
func call[T any](ctx context.Context, c *Client, req func(context.Context) (T, error)) (T, error) {
	var v T
	err := Bounded(ctx, c.callTimeout, func(ctx context.Context) error {
		var err error
		v, err = req(ctx)
		return err
	})
	return v, err
}

// retry runs attempt until it returns nil, an error whose kind retryable
// does not accept, or RetryTimeout (or ctx) ends; attempt gets a context
// bounded by RetryTimeout and should make its requests with call. The
// pauses between attempts follow the back-off. On timeout the last error is
// returned, wrapped with how long was tried.
func (c *Client) retry(ctx context.Context, retryable func(errorKind) bool, attempt func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.retryTimeout)
	defer cancel()
	began := time.Now()
	var pause time.Duration
	var last error // the last error that says something about etcd
	for {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && last != nil && errors.Is(err, context.DeadlineExceeded) {
			// The attempt was cut short by the overall timeout: what
			// the attempts before it said is the news.
			err = last
		}
		last = err
		if ctx.Err() != nil || !retryable(classify(ctx, err)) {
			return timeoutError(ctx, time.Since(began), err)
		}
		pause = c.backoff.next(pause)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return timeoutError(ctx, time.Since(began), err)
		case <-t.C:
		}
	}
}

// timeoutError says that the retries ran out of time, after spent, when
// they did, and returns err as it is otherwise.
func timeoutError(ctx context.Context, spent time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("still failing after %v: %w", spent.Round(time.Millisecond), err)
	case ctx.Err() != nil:
		return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
	}
	return err
}
