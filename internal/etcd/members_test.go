package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

const (
	peerA = "https://10.0.0.1:2380"
	peerB = "https://10.0.0.2:2380"
	peerC = "https://10.0.0.3:2380"
)

func TestInitialCluster(t *testing.T) {
	tests := []struct {
		name    string
		members []Member
		want    string
	}{
		{
			name: "the new learner has no name yet",
			members: []Member{
				{ID: 1, Name: "cp-a", PeerURLs: []string{peerA}},
				{ID: 2, PeerURLs: []string{peerB}, IsLearner: true},
			},
			want: "cp-a=" + peerA + ",cp-b=" + peerB,
		},
		{
			name: "another unstarted member gets its hexadecimal ID",
			members: []Member{
				{ID: 1, Name: "cp-a", PeerURLs: []string{peerA}},
				{ID: 0xabc, PeerURLs: []string{peerC}},
				{ID: 2, PeerURLs: []string{peerB}, IsLearner: true},
			},
			want: "abc=" + peerC + ",cp-a=" + peerA + ",cp-b=" + peerB,
		},
		{
			name: "every peer URL of a member",
			members: []Member{
				{ID: 1, Name: "cp-a", PeerURLs: []string{peerA, "https://[fd00::1]:2380"}},
				{ID: 2, Name: "cp-b", PeerURLs: []string{peerB}},
			},
			want: "cp-a=" + peerA + ",cp-a=https://[fd00::1]:2380,cp-b=" + peerB,
		},
		{
			name:    "sorted by name, not by text",
			members: []Member{{ID: 9, Name: "cp-b2", PeerURLs: []string{peerC}}, {ID: 1, Name: "cp-a", PeerURLs: []string{peerA}}},
			want:    "cp-a=" + peerA + ",cp-b=" + peerB + ",cp-b2=" + peerC,
		},
		{
			name:    "the new member is added when the list lacks it",
			members: []Member{{ID: 1, Name: "cp-a", PeerURLs: []string{peerA}}},
			want:    "cp-a=" + peerA + ",cp-b=" + peerB,
		},
		{
			name:    "this node's own stale name is replaced",
			members: []Member{{ID: 1, Name: "cp-a", PeerURLs: []string{peerA}}, {ID: 2, Name: "old", PeerURLs: []string{peerB}}},
			want:    "cp-a=" + peerA + ",cp-b=" + peerB,
		},
	}
	for _, tt := range tests {
		if got := InitialCluster(tt.members, "cp-b", peerB); got != tt.want {
			t.Errorf("%s: InitialCluster = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestMemberString(t *testing.T) {
	if got := (Member{ID: 0x1f, Name: "cp-a", PeerURLs: []string{peerA}}).String(); got != `member "cp-a" (1f, `+peerA+")" {
		t.Errorf("String = %s", got)
	}
	if got := (Member{ID: 0x2, PeerURLs: []string{peerB}, IsLearner: true}).String(); got != "unstarted learner 2 ("+peerB+")" {
		t.Errorf("String = %s", got)
	}
}

func TestAddLearner(t *testing.T) {
	ctx := context.Background()
	f := newFake(voter(1, "cp-a", peerA))
	c := testClient(t, f)

	m, members, err := c.AddLearner(ctx, "cp-b", peerB)
	if err != nil {
		t.Fatal(err)
	}
	if !m.IsLearner || m.Started() || len(members) != 2 {
		t.Fatalf("AddLearner = %v, %v; want an unstarted learner among two members", m, members)
	}
	if got := InitialCluster(members, "cp-b", peerB); got != "cp-a="+peerA+",cp-b="+peerB {
		t.Errorf("InitialCluster after AddLearner = %q", got)
	}

	// Again: the same member, nothing added.
	again, members, err := c.AddLearner(ctx, "cp-b", "HTTPS://10.0.0.2:2380/")
	if err != nil || again.ID != m.ID || len(members) != 2 {
		t.Fatalf("AddLearner again = %v, %v, %v; want %v", again, members, err, m)
	}
	if n := f.calls["MemberAddAsLearner"]; n != 1 {
		t.Errorf("MemberAddAsLearner called %d times, want 1", n)
	}
}

func TestAddLearnerRefusesAnotherMachine(t *testing.T) {
	ctx := context.Background()
	f := newFake(voter(1, "cp-a", peerA), voter(2, "cp-b", peerB))
	c := testClient(t, f)

	_, _, err := c.AddLearner(ctx, "cp-b", peerC)
	if err == nil || !strings.Contains(err.Error(), `member "cp-b" (2, `+peerB+") already exists with other peer URLs") {
		t.Errorf("AddLearner with a taken name = %v", err)
	}
	_, _, err = c.AddLearner(ctx, "cp-c", peerB)
	if err == nil || !strings.Contains(err.Error(), "peer URL "+peerB+` already belongs to member "cp-b"`) {
		t.Errorf("AddLearner with a taken peer URL = %v", err)
	}
	if n := f.calls["MemberAddAsLearner"]; n != 0 {
		t.Errorf("MemberAddAsLearner called %d times, want 0", n)
	}
	// A voting member already there under this name and URL is fine.
	if m, _, err := c.AddLearner(ctx, "cp-b", peerB); err != nil || m.ID != 2 || m.IsLearner {
		t.Errorf("AddLearner of an existing voter = %v, %v", m, err)
	}
}

func TestAddLearnerBadInput(t *testing.T) {
	c := testClient(t, newFake(voter(1, "cp-a", peerA)))
	if _, _, err := c.AddLearner(context.Background(), "", peerB); err == nil {
		t.Error("AddLearner with no name succeeded")
	}
	if _, _, err := c.AddLearner(context.Background(), "cp-b", "10.0.0.2:2380"); err == nil {
		t.Error("AddLearner with a URL without scheme succeeded")
	}
}

func TestAddLearnerWaitsForOtherJoins(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA))
	f.failures["MemberAddAsLearner"] = []error{rpctypes.ErrGRPCTooManyLearners, rpctypes.ErrGRPCUnhealthy, rpctypes.ErrGRPCMemberNotEnoughStarted, rpctypes.ErrGRPCNoLeader}
	f.failures["MemberList"] = []error{rpctypes.ErrGRPCLeaderChanged}
	c := testClient(t, f)
	if _, _, err := c.AddLearner(context.Background(), "cp-b", peerB); err != nil {
		t.Fatal(err)
	}
	if n := f.calls["MemberAddAsLearner"]; n != 5 {
		t.Errorf("MemberAddAsLearner called %d times, want 5", n)
	}
}

func TestAddLearnerGivesUpOnAPendingLearner(t *testing.T) {
	pending := &etcdserverpb.Member{ID: 0x77, PeerURLs: []string{peerC}, IsLearner: true}
	f := newFake(voter(1, "cp-a", peerA), pending)
	c := testClient(t, f)
	c.retryTimeout = 50 * time.Millisecond
	began := time.Now()
	_, _, err := c.AddLearner(context.Background(), "cp-b", peerB)
	if err == nil {
		t.Fatal("AddLearner succeeded while another learner is pending")
	}
	for _, want := range []string{"still failing after", "unstarted learner 77 (" + peerC + ")", "too many learner members"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, rpctypes.ErrTooManyLearners) {
		t.Errorf("error %v does not wrap etcd's answer", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("gave up after %v, want about 50ms", d)
	}
}

func TestAddLearnerLostAnswer(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA))
	f.applyThenFail["MemberAddAsLearner"] = rpctypes.ErrGRPCTimeout
	c := testClient(t, f)
	m, members, err := c.AddLearner(context.Background(), "cp-b", peerB)
	if err != nil || !m.IsLearner || len(members) != 2 {
		t.Fatalf("AddLearner = %v, %v, %v", m, members, err)
	}
	if n := f.calls["MemberAddAsLearner"]; n != 1 {
		t.Errorf("MemberAddAsLearner called %d times, want 1", n)
	}
}

func TestAddLearnerFatal(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA))
	f.failures["MemberAddAsLearner"] = []error{rpctypes.ErrGRPCPermissionDenied, nil}
	c := testClient(t, f)
	_, _, err := c.AddLearner(context.Background(), "cp-b", peerB)
	if !errors.Is(err, rpctypes.ErrPermissionDenied) || f.calls["MemberAddAsLearner"] != 1 {
		t.Errorf("AddLearner = %v after %d calls; want permission denied at once", err, f.calls["MemberAddAsLearner"])
	}
}

func TestPromoteLearner(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA))
	c := testClient(t, f)
	learner, _, err := c.AddLearner(context.Background(), "cp-b", peerB)
	if err != nil {
		t.Fatal(err)
	}
	f.notReadyFor = 3
	m, err := c.PromoteLearner(context.Background(), learner.ID)
	if err != nil || m.IsLearner || m.ID != learner.ID {
		t.Fatalf("PromoteLearner = %v, %v", m, err)
	}
	if n := f.calls["MemberPromote"]; n != 4 {
		t.Errorf("MemberPromote called %d times, want 4", n)
	}
	// Again: already voting, nothing asked.
	if m, err := c.PromoteLearner(context.Background(), learner.ID); err != nil || m.IsLearner {
		t.Errorf("PromoteLearner again = %v, %v", m, err)
	}
	if n := f.calls["MemberPromote"]; n != 4 {
		t.Errorf("MemberPromote called %d times after a second promotion, want 4", n)
	}
	if _, err := c.PromoteLearner(context.Background(), 0x999); err == nil || !strings.Contains(err.Error(), "no such member") {
		t.Errorf("PromoteLearner of an unknown member = %v", err)
	}
}

func TestPromoteLearnerLostAnswer(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA), &etcdserverpb.Member{ID: 2, Name: "cp-b", PeerURLs: []string{peerB}, IsLearner: true})
	f.applyThenFail["MemberPromote"] = rpctypes.ErrGRPCTimeoutDueToConnectionLost
	c := testClient(t, f)
	if m, err := c.PromoteLearner(context.Background(), 2); err != nil || m.IsLearner {
		t.Fatalf("PromoteLearner = %v, %v", m, err)
	}
}

func TestPromoteLearnerNotLearnerAnswer(t *testing.T) {
	// The list still shows a learner, but etcd says it votes already (a
	// promotion by someone else between the two requests).
	f := newFake(voter(1, "cp-a", peerA), &etcdserverpb.Member{ID: 2, Name: "cp-b", PeerURLs: []string{peerB}, IsLearner: true})
	f.failures["MemberPromote"] = []error{rpctypes.ErrGRPCMemberNotLearner}
	c := testClient(t, f)
	if m, err := c.PromoteLearner(context.Background(), 2); err != nil || m.IsLearner {
		t.Fatalf("PromoteLearner = %v, %v", m, err)
	}
}

func TestPromoteLearnerNeverReady(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA), &etcdserverpb.Member{ID: 2, PeerURLs: []string{peerB}, IsLearner: true})
	f.notReadyFor = 1 << 30
	c := testClient(t, f)
	c.retryTimeout = 50 * time.Millisecond
	_, err := c.PromoteLearner(context.Background(), 2)
	if err == nil || !strings.Contains(err.Error(), "has not caught up with the leader yet") || !strings.Contains(err.Error(), "still failing after") {
		t.Fatalf("PromoteLearner of a learner that never catches up = %v", err)
	}
}

func TestPromoteLearnerHonoursContext(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA), &etcdserverpb.Member{ID: 2, PeerURLs: []string{peerB}, IsLearner: true})
	f.notReadyFor = 1 << 30
	c := testClient(t, f)
	c.retryTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := c.PromoteLearner(ctx, 2); err == nil {
		t.Fatal("PromoteLearner succeeded")
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("PromoteLearner returned after %v, want about 30ms", d)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	f := newFake(voter(1, "cp-a", peerA), voter(2, "cp-b", peerB), &etcdserverpb.Member{ID: 3, PeerURLs: []string{peerC}, IsLearner: true})
	c := testClient(t, f)

	m, found, err := c.RemoveByName(ctx, "cp-b")
	if err != nil || !found || m.ID != 2 {
		t.Fatalf("RemoveByName = %v, %v, %v", m, found, err)
	}
	if _, found, err := c.RemoveByName(ctx, "cp-b"); err != nil || found {
		t.Errorf("RemoveByName again = %v, %v; want not found and no error", found, err)
	}
	// The unstarted learner has no name; its peer URL finds it.
	if m, found, err := c.RemoveByPeerURL(ctx, peerC); err != nil || !found || m.ID != 3 {
		t.Errorf("RemoveByPeerURL = %v, %v, %v", m, found, err)
	}
	_, _, err = c.RemoveByPeerURL(ctx, peerA)
	if !errors.Is(err, ErrOnlyVoter) {
		t.Errorf("removing the only voter = %v, want ErrOnlyVoter", err)
	}
	if n := f.calls["MemberRemove"]; n != 2 {
		t.Errorf("MemberRemove called %d times, want 2", n)
	}
	if _, _, err := c.RemoveByName(ctx, ""); err == nil {
		t.Error("RemoveByName with no name succeeded")
	}
	if _, _, err := c.RemoveByPeerURL(ctx, "nonsense"); err == nil {
		t.Error("RemoveByPeerURL with a bad URL succeeded")
	}
}

func TestRemoveRetries(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA), voter(2, "cp-b", peerB), voter(3, "cp-c", peerC))
	f.failures["MemberRemove"] = []error{rpctypes.ErrGRPCUnhealthy, rpctypes.ErrGRPCMemberNotEnoughStarted}
	f.applyThenFail["MemberRemove"] = rpctypes.ErrGRPCTimeout
	c := testClient(t, f)
	m, found, err := c.RemoveByName(context.Background(), "cp-c")
	if err != nil || !found || m.ID != 3 {
		t.Fatalf("RemoveByName = %v, %v, %v", m, found, err)
	}
	if n := f.calls["MemberRemove"]; n != 3 {
		t.Errorf("MemberRemove called %d times, want 3", n)
	}
	if len(f.members) != 2 {
		t.Errorf("%d members left, want 2", len(f.members))
	}
}

func TestRemoveMeanwhileGone(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA), voter(2, "cp-b", peerB))
	f.failures["MemberRemove"] = []error{rpctypes.ErrGRPCMemberNotFound}
	c := testClient(t, f)
	if _, found, err := c.RemoveByName(context.Background(), "cp-b"); err != nil || !found {
		t.Errorf("RemoveByName of a member removed meanwhile = %v, %v", found, err)
	}
}

func TestMembersRetriesTransient(t *testing.T) {
	f := newFake(voter(1, "cp-a", peerA))
	f.failures["MemberList"] = []error{rpctypes.ErrGRPCNoLeader, context.DeadlineExceeded}
	c := testClient(t, f)
	ms, err := c.Members(context.Background())
	if err != nil || len(ms) != 1 || ms[0].Name != "cp-a" || ms[0].ClientURLs[0] != "https://client-of-cp-a" {
		t.Fatalf("Members = %v, %v", ms, err)
	}
	f.failures["MemberList"] = []error{rpctypes.ErrGRPCPermissionDenied}
	if _, err := c.Members(context.Background()); !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("Members = %v, want permission denied", err)
	}
}

func TestCheckHealth(t *testing.T) {
	eps := []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}
	ctx := context.Background()

	f := newFake()
	if err := testClient(t, f, eps...).CheckHealth(ctx); err != nil {
		t.Fatalf("CheckHealth of a healthy cluster: %v", err)
	}
	if f.calls["Status"] != 2 || f.calls["Get"] != 1 {
		t.Errorf("calls %v, want 2 Status and 1 Get", f.calls)
	}

	f = newFake()
	f.failures["Status"] = []error{rpctypes.ErrGRPCNoLeader}
	if err := testClient(t, f, eps...).CheckHealth(ctx); err != nil {
		t.Errorf("CheckHealth after one transient failure: %v", err)
	}

	f = newFake()
	f.status[eps[1]] = statusOf(1, 1, "NOSPACE")
	err := testClient(t, f, eps...).CheckHealth(ctx)
	if err == nil || !strings.Contains(err.Error(), eps[1]+" reports: NOSPACE") || f.calls["Status"] != 2 {
		t.Errorf("CheckHealth with an alarm = %v after %d Status calls; want it at once", err, f.calls["Status"])
	}

	f = newFake()
	f.status[eps[1]] = statusOf(2, 1)
	if err := testClient(t, f, eps...).CheckHealth(ctx); err == nil || !strings.Contains(err.Error(), "different clusters") {
		t.Errorf("CheckHealth across two clusters = %v", err)
	}

	f = newFake()
	f.status[eps[0]] = statusOf(1, 0)
	c := testClient(t, f, eps...)
	c.retryTimeout = 30 * time.Millisecond
	if err := c.CheckHealth(ctx); err == nil || !strings.Contains(err.Error(), eps[0]+" knows no leader") || f.calls["Status"] < 4 {
		t.Errorf("CheckHealth without a leader = %v after %d Status calls; want retries, then that error", err, f.calls["Status"])
	}

	f = newFake()
	f.getErr = rpctypes.ErrGRPCPermissionDenied
	if err := testClient(t, f, eps...).CheckHealth(ctx); err == nil || !strings.Contains(err.Error(), "linearizable read") {
		t.Errorf("CheckHealth with a failing read = %v", err)
	}
}

// A member that is down does not fail the check while a quorum of the
// voting members answers; two of three down do.
func TestCheckHealthQuorum(t *testing.T) {
	ctx := context.Background()
	eps := []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"}
	member := func(id uint64, name string) *etcdserverpb.Member {
		return &etcdserverpb.Member{ID: id, Name: name, PeerURLs: []string{fmt.Sprintf("https://10.0.0.%d:2380", id)}, ClientURLs: []string{eps[id-1]}}
	}
	members := []*etcdserverpb.Member{member(1, "cp-a"), member(2, "cp-b"), member(3, "cp-c")}

	f := newFake(members...)
	f.status[eps[2]] = statusOf(1, 0)
	if err := testClient(t, f, eps...).CheckHealth(ctx); err != nil {
		t.Errorf("CheckHealth with two of three voters answering: %v", err)
	}

	f = newFake(members...)
	f.status[eps[1]], f.status[eps[2]] = statusOf(1, 0), statusOf(1, 0)
	c := testClient(t, f, eps...)
	c.retryTimeout = 30 * time.Millisecond
	if err := c.CheckHealth(ctx); err == nil || !strings.Contains(err.Error(), eps[2]+" knows no leader") {
		t.Errorf("CheckHealth with one of three voters answering = %v, want a failure naming the others", err)
	}

	// A learner does not count towards the quorum.
	learner := member(3, "cp-c")
	learner.IsLearner = true
	f = newFake(members[0], members[1], learner)
	f.status[eps[1]] = statusOf(1, 0)
	c = testClient(t, f, eps...)
	c.retryTimeout = 30 * time.Millisecond
	if err := c.CheckHealth(ctx); err == nil {
		t.Errorf("CheckHealth with one of two voters (and a learner) answering passed")
	}
}

// The endpoints become the client URLs of the started voters: a member's
// Pod the API server still shows after its member was removed (its node
// reset) does not make every later health check fail.
func TestSyncEndpoints(t *testing.T) {
	ctx := context.Background()
	member := func(id uint64, name string) *etcdserverpb.Member {
		return &etcdserverpb.Member{ID: id, Name: name,
			PeerURLs:   []string{fmt.Sprintf("https://10.0.0.%d:2380", id)},
			ClientURLs: []string{fmt.Sprintf("https://10.0.0.%d:2379", id)}}
	}
	learner := member(3, "node3")
	learner.IsLearner = true
	unstarted := &etcdserverpb.Member{ID: 4, PeerURLs: []string{"https://10.0.0.4:2380"}}
	f := newFake(member(1, "node1"), member(2, "node2"), learner, unstarted)
	stale := "https://10.0.0.9:2379"
	c := testClient(t, f, "https://10.0.0.1:2379", stale)
	f.status[stale] = statusOf(1, 0) // would fail: no leader
	if err := c.SyncEndpoints(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}
	if !slices.Equal(c.Endpoints(), want) || !slices.Equal(f.endpoints, want) {
		t.Errorf("endpoints %v, etcd client's %v; want %v", c.Endpoints(), f.endpoints, want)
	}
	if err := c.CheckHealth(ctx); err != nil {
		t.Errorf("CheckHealth after the sync: %v", err)
	}

	// The member list is asked again after a transient failure.
	f = newFake(member(1, "node1"))
	f.failures["MemberList"] = []error{rpctypes.ErrGRPCNoLeader}
	if err := testClient(t, f).SyncEndpoints(ctx); err != nil {
		t.Errorf("SyncEndpoints after one transient failure: %v", err)
	}

	// A cluster without a started voter leaves the endpoints as they were.
	f = newFake(unstarted)
	c = testClient(t, f, stale)
	if err := c.SyncEndpoints(ctx); err == nil || !slices.Equal(c.Endpoints(), []string{stale}) {
		t.Errorf("SyncEndpoints without a voter: %v, endpoints %v", err, c.Endpoints())
	}
}
