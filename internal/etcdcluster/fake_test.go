package etcdcluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/kubeadm-go/kubeadm/internal/etcdrpc"
)

// fakeEtcd behaves like etcd's membership API as far as this package
// relies on it: one learner at most, promotion only once the learner is
// "in sync" (after notReadyFor refusals), and scripted failures before
// each call.
type fakeEtcd struct {
	mu      sync.Mutex
	members []*etcdrpc.Member
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
	status        map[string]*etcdrpc.Status
	getErr        error
	// endpoints are those SetEndpoints gave last.
	endpoints []string
}

func newFake(members ...*etcdrpc.Member) *fakeEtcd {
	return &fakeEtcd{
		members:       members,
		nextID:        0x100,
		failures:      map[string][]error{},
		calls:         map[string]int{},
		applyThenFail: map[string]error{},
		status:        map[string]*etcdrpc.Status{},
	}
}

func voter(id uint64, name, peer string) *etcdrpc.Member {
	return &etcdrpc.Member{ID: id, Name: name, PeerURLs: []string{peer}, ClientURLs: []string{"https://client-of-" + name}}
}

func (f *fakeEtcd) enter(ctx context.Context, method string) error {
	f.calls[method]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if q := f.failures[method]; len(q) > 0 {
		f.failures[method] = q[1:]
		return q[0]
	}
	return nil
}

func (f *fakeEtcd) lost(method string) error {
	err := f.applyThenFail[method]
	delete(f.applyThenFail, method)
	return err
}

func (f *fakeEtcd) snapshot() []etcdrpc.Member {
	out := make([]etcdrpc.Member, 0, len(f.members))
	for _, m := range f.members {
		out = append(out, *m)
	}
	return out
}

func (f *fakeEtcd) MemberList(ctx context.Context) (etcdrpc.Header, []etcdrpc.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberList"); err != nil {
		return etcdrpc.Header{}, nil, err
	}
	return etcdrpc.Header{ClusterID: 1}, f.snapshot(), nil
}

func (f *fakeEtcd) MemberAddAsLearner(ctx context.Context, peerAddrs []string) (etcdrpc.Member, []etcdrpc.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberAddAsLearner"); err != nil {
		return etcdrpc.Member{}, nil, err
	}
	for _, m := range f.members {
		if slices.Contains(m.PeerURLs, peerAddrs[0]) {
			return etcdrpc.Member{}, nil, rpctypes.ErrGRPCPeerURLExist
		}
		if m.IsLearner {
			return etcdrpc.Member{}, nil, rpctypes.ErrGRPCTooManyLearners
		}
	}
	m := &etcdrpc.Member{ID: f.nextID, PeerURLs: peerAddrs, IsLearner: true}
	f.nextID++
	f.members = append(f.members, m)
	if err := f.lost("MemberAddAsLearner"); err != nil {
		return etcdrpc.Member{}, nil, err
	}
	return *m, f.snapshot(), nil
}

func (f *fakeEtcd) MemberPromote(ctx context.Context, id uint64) ([]etcdrpc.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberPromote"); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(f.members, func(m *etcdrpc.Member) bool { return m.ID == id })
	switch {
	case i < 0:
		return nil, rpctypes.ErrGRPCMemberNotFound
	case !f.members[i].IsLearner:
		return nil, rpctypes.ErrGRPCMemberNotLearner
	case f.notReadyFor > 0:
		f.notReadyFor--
		return nil, rpctypes.ErrGRPCLearnerNotReady
	}
	f.members[i].IsLearner = false
	if err := f.lost("MemberPromote"); err != nil {
		return nil, err
	}
	return f.snapshot(), nil
}

func (f *fakeEtcd) MemberRemove(ctx context.Context, id uint64) ([]etcdrpc.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "MemberRemove"); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(f.members, func(m *etcdrpc.Member) bool { return m.ID == id })
	if i < 0 {
		return nil, rpctypes.ErrGRPCMemberNotFound
	}
	f.members = slices.Delete(f.members, i, i+1)
	if err := f.lost("MemberRemove"); err != nil {
		return nil, err
	}
	return f.snapshot(), nil
}

func (f *fakeEtcd) Status(ctx context.Context, endpoint string) (*etcdrpc.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "Status"); err != nil {
		return nil, err
	}
	if st, ok := f.status[endpoint]; ok {
		return st, nil
	}
	return &etcdrpc.Status{Header: etcdrpc.Header{ClusterID: 1}, Leader: 1}, nil
}

func (f *fakeEtcd) Count(ctx context.Context, _ string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(ctx, "Count"); err != nil {
		return 0, err
	}
	return 0, f.getErr
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
