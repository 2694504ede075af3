package etcd

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// fakeEtcd behaves like etcd's client (*clientv3.Client) and its
// membership API as far as this package relies on them: one learner at
// most, promotion only once the learner is "in sync" (after notReadyFor
// refusals), and scripted failures before each call. Its errors are those
// etcd's client returns: etcd's answers turned into rpctypes.EtcdError
// values by clientv3.ContextError.
type fakeEtcd struct {
	mu      sync.Mutex
	members []*etcdserverpb.Member
	nextID  uint64
	// failures are returned, in order, by the method of that name before
	// it does anything.
	failures map[string][]error
	// notReadyFor is how many promotions of a learner are refused before it
	// counts as caught up.
	notReadyFor int
	calls       map[string]int
	// applyThenFail makes the next call of that name take effect and then
	// report the error, as when an answer is lost.
	applyThenFail map[string]error
	status        map[string]*clientv3.StatusResponse
	getErr        error
	// endpoints are those SetEndpoints gave last.
	endpoints []string
}

func newFake(members ...*etcdserverpb.Member) *fakeEtcd {
	return &fakeEtcd{
		members:       members,
		nextID:        0x100,
		failures:      map[string][]error{},
		calls:         map[string]int{},
		applyThenFail: map[string]error{},
		status:        map[string]*clientv3.StatusResponse{},
	}
}

func voter(id uint64, name, peer string) *etcdserverpb.Member {
	return &etcdserverpb.Member{ID: id, Name: name, PeerURLs: []string{peer}, ClientURLs: []string{"https://client-of-" + name}}
}

// statusOf is a member's status: its cluster's ID, the leader it knows
// and the alarms it reports.
func statusOf(clusterID, leader uint64, alarms ...string) *clientv3.StatusResponse {
	return &clientv3.StatusResponse{Header: &etcdserverpb.ResponseHeader{ClusterId: clusterID, MemberId: 1}, Leader: leader, Errors: alarms}
}

func (f *fakeEtcd) enter(ctx context.Context, method string) error {
	f.calls[method]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if q := f.failures[method]; len(q) > 0 {
		f.failures[method] = q[1:]
		return clientv3.ContextError(ctx, q[0])
	}
	return nil
}

func (f *fakeEtcd) lost(ctx context.Context, method string) error {
	err := f.applyThenFail[method]
	delete(f.applyThenFail, method)
	return clientv3.ContextError(ctx, err)
}

func (f *fakeEtcd) snapshot() []*etcdserverpb.Member {
	out := make([]*etcdserverpb.Member, 0, len(f.members))
	for _, m := range f.members {
		out = append(out, proto.CloneOf(m))
	}
	return out
}

func header() *etcdserverpb.ResponseHeader { return &etcdserverpb.ResponseHeader{ClusterId: 1} }

func (f *fakeEtcd) MemberList(ctx context.Context, _ ...clientv3.OpOption) (*clientv3.MemberListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberList"); err != nil {
		return nil, err
	}
	return &clientv3.MemberListResponse{Header: header(), Members: f.snapshot()}, nil
}

func (f *fakeEtcd) MemberAddAsLearner(ctx context.Context, peerAddrs []string) (*clientv3.MemberAddResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberAddAsLearner"); err != nil {
		return nil, err
	}
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peerAddrs[0]) {
			return nil, rpctypes.ErrPeerURLExist
		}
		if m.IsLearner {
			return nil, rpctypes.ErrTooManyLearners
		}
	}
	m := &etcdserverpb.Member{ID: f.nextID, PeerURLs: peerAddrs, IsLearner: true}
	f.nextID++
	f.members = append(f.members, m)
	if err := f.lost(ctx, "MemberAddAsLearner"); err != nil {
		return nil, err
	}
	return &clientv3.MemberAddResponse{Header: header(), Member: proto.CloneOf(m), Members: f.snapshot()}, nil
}

func (f *fakeEtcd) MemberPromote(ctx context.Context, id uint64) (*clientv3.MemberPromoteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberPromote"); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(f.members, func(m *etcdserverpb.Member) bool { return m.ID == id })
	switch {
	case i < 0:
		return nil, rpctypes.ErrMemberNotFound
	case !f.members[i].IsLearner:
		return nil, rpctypes.ErrMemberNotLearner
	case f.notReadyFor > 0:
		f.notReadyFor--
		return nil, rpctypes.ErrMemberLearnerNotReady
	}
	f.members[i].IsLearner = false
	if err := f.lost(ctx, "MemberPromote"); err != nil {
		return nil, err
	}
	return &clientv3.MemberPromoteResponse{Header: header(), Members: f.snapshot()}, nil
}

func (f *fakeEtcd) MemberRemove(ctx context.Context, id uint64) (*clientv3.MemberRemoveResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberRemove"); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(f.members, func(m *etcdserverpb.Member) bool { return m.ID == id })
	if i < 0 {
		return nil, rpctypes.ErrMemberNotFound
	}
	f.members = slices.Delete(f.members, i, i+1)
	if err := f.lost(ctx, "MemberRemove"); err != nil {
		return nil, err
	}
	return &clientv3.MemberRemoveResponse{Header: header(), Members: f.snapshot()}, nil
}

func (f *fakeEtcd) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "Status"); err != nil {
		return nil, err
	}
	if st, ok := f.status[endpoint]; ok {
		return st, nil
	}
	return statusOf(1, 1), nil
}

// Get answers the health check's count of a key.
func (f *fakeEtcd) Get(ctx context.Context, _ string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "Get"); err != nil {
		return nil, err
	}
	if op := clientv3.OpGet("k", opts...); !op.IsCountOnly() || op.IsSerializable() {
		return nil, errors.New("the fake answers only linearizable counts")
	}
	if f.getErr != nil {
		return nil, clientv3.ContextError(ctx, f.getErr)
	}
	return &clientv3.GetResponse{Header: header()}, nil
}

func (f *fakeEtcd) SetEndpoints(endpoints ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endpoints = append([]string(nil), endpoints...)
}

func (f *fakeEtcd) Close() error { return nil }

// testClient wraps f with short timeouts and pauses.
func testClient(t *testing.T, f *fakeEtcd, endpoints ...string) *Client {
	t.Helper()
	if len(endpoints) == 0 {
		endpoints = []string{"https://10.0.0.1:2379"}
	}
	cfg := Config{
		Endpoints:    endpoints,
		DialTimeout:  time.Second,
		CallTimeout:  time.Second,
		RetryTimeout: 2 * time.Second,
		Backoff:      Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond},
	}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	return newClient(f, cfg)
}
