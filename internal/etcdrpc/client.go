package etcdrpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// The gRPC methods called.
const (
	methodMemberList    = "/etcdserverpb.Cluster/MemberList"
	methodMemberAdd     = "/etcdserverpb.Cluster/MemberAdd"
	methodMemberRemove  = "/etcdserverpb.Cluster/MemberRemove"
	methodMemberPromote = "/etcdserverpb.Cluster/MemberPromote"
	methodStatus        = "/etcdserverpb.Maintenance/Status"
	methodSnapshot      = "/etcdserverpb.Maintenance/Snapshot"
	methodRange         = "/etcdserverpb.KV/Range"
)

// reconnectBackoff paces the attempts to reconnect to an endpoint.
var reconnectBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}

// maxAnswerBytes is the largest answer accepted: etcd's own client allows
// any size (a snapshot comes in chunks of 32 KiB).
const maxAnswerBytes = 1<<31 - 1

// Client is a connection to an etcd cluster's endpoints. It is safe for
// concurrent use; Close it when done.
type Client struct {
	creds credentials.TransportCredentials
	dial  func(context.Context, string) (net.Conn, error)

	mu        sync.Mutex
	endpoints []string
	current   int                         // the endpoint to try first
	conns     map[string]*grpc.ClientConn // by endpoint URL
	closed    bool
}

// New returns a client for endpoints (https:// URLs), which checks the
// members against tlsConfig's CAs and shows its certificate; dial, when
// not nil, makes the connections (it gets host:port). Nothing is
// connected until the first call.
func New(endpoints []string, tlsConfig *tls.Config, dial func(context.Context, string) (net.Conn, error)) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no etcd endpoint given")
	}
	for _, e := range endpoints {
		if _, err := hostPort(e); err != nil {
			return nil, err
		}
	}
	return &Client{
		creds:     credentials.NewTLS(tlsConfig.Clone()),
		dial:      dial,
		endpoints: slices.Clone(endpoints),
		conns:     map[string]*grpc.ClientConn{},
	}, nil
}

// hostPort returns the host:port of an endpoint URL.
func hostPort(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("etcd endpoint %q: want a URL such as https://host:2379", endpoint)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", fmt.Errorf("etcd endpoint %q: %w", endpoint, err)
	}
	return u.Host, nil
}

// SetEndpoints replaces the endpoints calls go to.
func (c *Client) SetEndpoints(endpoints ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endpoints = slices.Clone(endpoints)
	c.current = 0
}

// Close closes every connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for ep, cc := range c.conns {
		errs = append(errs, cc.Close())
		delete(c.conns, ep)
	}
	return errors.Join(errs...)
}

// conn returns the connection to endpoint, made on first use.
func (c *Client) conn(endpoint string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the etcd client is closed")
	}
	if cc := c.conns[endpoint]; cc != nil {
		return cc, nil
	}
	addr, err := hostPort(endpoint)
	if err != nil {
		return nil, err
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(c.creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(maxAnswerBytes)),
		// A member that restarts (an upgrade replaces its Pod) is asked
		// again within seconds, not after gRPC's default pauses of up to
		// two minutes; the callers' retries pace themselves.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff}),
	}
	if c.dial != nil {
		opts = append(opts, grpc.WithContextDialer(c.dial))
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("etcd endpoint %s: %w", endpoint, err)
	}
	c.conns[endpoint] = cc
	return cc, nil
}

// invoke calls method on endpoint with request and returns the answer.
func (c *Client) invoke(ctx context.Context, endpoint, method string, request []byte) ([]byte, error) {
	cc, err := c.conn(endpoint)
	if err != nil {
		return nil, err
	}
	var answer []byte
	if err := cc.Invoke(ctx, method, &request, &answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// invokeAny calls method on the endpoint that answered last and, when it
// cannot be reached, on the others in turn.
func (c *Client) invokeAny(ctx context.Context, method string, request []byte) ([]byte, error) {
	c.mu.Lock()
	eps, first := slices.Clone(c.endpoints), c.current
	c.mu.Unlock()
	if len(eps) == 0 {
		return nil, errors.New("the etcd client has no endpoint")
	}
	var errs []error
	for i := range eps {
		k := (first + i) % len(eps)
		answer, err := c.invoke(ctx, eps[k], method, request)
		if err == nil {
			c.mu.Lock()
			if slices.Equal(c.endpoints, eps) {
				c.current = k
			}
			c.mu.Unlock()
			return answer, nil
		}
		if !unreachable(err) || ctx.Err() != nil {
			// etcd's own refusals (a learner serves no such call, no
			// leader, a timeout) may be this member's: the next call
			// starts at the next endpoint, as etcd's client balances.
			c.mu.Lock()
			if slices.Equal(c.endpoints, eps) {
				c.current = (k + 1) % len(eps)
			}
			c.mu.Unlock()
			return nil, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	// Keep the status of the last one for the caller's classification.
	return nil, &allUnreachable{errs: errs}
}

// allUnreachable says that no endpoint could be reached.
type allUnreachable struct{ errs []error }

func (e *allUnreachable) Error() string {
	return "no etcd endpoint could be reached: " + errors.Join(e.errs...).Error()
}

// GRPCStatus lets status.FromError and status.Code see an Unavailable.
func (e *allUnreachable) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.Error())
}

func (e *allUnreachable) Unwrap() []error { return e.errs }

// MemberList lists the cluster's members, as the leader knows them.
func (c *Client) MemberList(ctx context.Context) (Header, []Member, error) {
	answer, err := c.invokeAny(ctx, methodMemberList, memberListRequest())
	if err != nil {
		return Header{}, nil, err
	}
	h, _, members, err := membersAnswer(answer, 2)
	return h, members, err
}

// MemberAddAsLearner announces a learner with peerURLs and returns it and
// the members after the change.
func (c *Client) MemberAddAsLearner(ctx context.Context, peerURLs []string) (added Member, members []Member, err error) {
	answer, err := c.invokeAny(ctx, methodMemberAdd, memberAddRequest(peerURLs, true))
	if err != nil {
		return Member{}, nil, err
	}
	_, added, members, err = membersAnswer(answer, 3)
	return added, members, err
}

// MemberPromote makes the learner id a voting member.
func (c *Client) MemberPromote(ctx context.Context, id uint64) ([]Member, error) {
	return c.changeMember(ctx, methodMemberPromote, id)
}

// MemberRemove removes the member id.
func (c *Client) MemberRemove(ctx context.Context, id uint64) ([]Member, error) {
	return c.changeMember(ctx, methodMemberRemove, id)
}

// changeMember calls a method that takes a member's ID and answers with
// the members after the change.
func (c *Client) changeMember(ctx context.Context, method string, id uint64) ([]Member, error) {
	answer, err := c.invokeAny(ctx, method, memberIDRequest(id))
	if err != nil {
		return nil, err
	}
	_, _, members, err := membersAnswer(answer, 2)
	return members, err
}

// Status asks the member at endpoint (one of the client's or not) for its
// status.
func (c *Client) Status(ctx context.Context, endpoint string) (*Status, error) {
	answer, err := c.invoke(ctx, endpoint, methodStatus, nil)
	if err != nil {
		return nil, err
	}
	return decodeStatus(answer)
}

// Count returns how many keys named key there are (0 or 1), with a
// linearizable read: the leader confirms it is still the leader.
func (c *Client) Count(ctx context.Context, key string) (int64, error) {
	answer, err := c.invokeAny(ctx, methodRange, countRequest(key))
	if err != nil {
		return 0, err
	}
	return decodeCount(answer)
}

// Snapshot asks the endpoint that answered last for a snapshot of
// its database and returns the version of etcd that makes it and the
// stream of its bytes: the database, then its SHA-256. The stream ends
// with io.EOF once all of it came; closing it early, or ending ctx, stops
// the transfer.
func (c *Client) Snapshot(ctx context.Context) (version string, snapshot io.ReadCloser, err error) {
	c.mu.Lock()
	if len(c.endpoints) == 0 {
		c.mu.Unlock()
		return "", nil, errors.New("the etcd client has no endpoint")
	}
	endpoint := c.endpoints[c.current]
	c.mu.Unlock()
	cc, err := c.conn(endpoint)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stream, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, methodSnapshot)
	if err != nil {
		cancel()
		return "", nil, err
	}
	request := []byte(nil)
	if err := stream.SendMsg(&request); err != nil {
		cancel()
		return "", nil, err
	}
	if err := stream.CloseSend(); err != nil {
		cancel()
		return "", nil, err
	}
	// The first chunk carries the version; it may already carry data.
	first, err := receiveChunk(stream)
	if err != nil {
		cancel()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", nil, err
	}
	return first.version, &snapshotReader{stream: stream, cancel: cancel, pending: first.blob}, nil
}

func receiveChunk(stream grpc.ClientStream) (snapshotChunk, error) {
	var answer []byte
	if err := stream.RecvMsg(&answer); err != nil {
		return snapshotChunk{}, err
	}
	return decodeSnapshotChunk(answer)
}

// snapshotReader reads a snapshot stream's blobs one after the other.
type snapshotReader struct {
	stream  grpc.ClientStream
	cancel  context.CancelFunc
	pending []byte
	err     error
}

func (r *snapshotReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		chunk, err := receiveChunk(r.stream)
		if err != nil {
			r.err = err
			continue
		}
		r.pending = chunk.blob
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

func (r *snapshotReader) Close() error {
	r.cancel()
	return nil
}

// rawCodec passes requests and answers through as bytes: the messages are
// encoded and decoded by this package. It keeps the name of gRPC's
// protocol buffer codec, which is what etcd expects on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("etcdrpc: cannot encode %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("etcdrpc: cannot decode into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
