package etcdrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// etcd's own API packages (linked into the tests only) are the oracle for
// the descriptions and the messages this package writes by hand.

func TestDescriptionsAreEtcds(t *testing.T) {
	for ours, theirs := range map[string]error{
		ErrTooManyLearners:            rpctypes.ErrGRPCTooManyLearners,
		ErrUnhealthy:                  rpctypes.ErrGRPCUnhealthy,
		ErrMemberNotEnoughStarted:     rpctypes.ErrGRPCMemberNotEnoughStarted,
		ErrMemberLearnerNotReady:      rpctypes.ErrGRPCLearnerNotReady,
		ErrPeerURLExist:               rpctypes.ErrGRPCPeerURLExist,
		ErrMemberNotFound:             rpctypes.ErrGRPCMemberNotFound,
		ErrMemberNotLearner:           rpctypes.ErrGRPCMemberNotLearner,
		ErrNoLeader:                   rpctypes.ErrGRPCNoLeader,
		ErrLeaderChanged:              rpctypes.ErrGRPCLeaderChanged,
		ErrNotCapable:                 rpctypes.ErrGRPCNotCapable,
		ErrStopped:                    rpctypes.ErrGRPCStopped,
		ErrTimeout:                    rpctypes.ErrGRPCTimeout,
		ErrTimeoutDueToLeaderFail:     rpctypes.ErrGRPCTimeoutDueToLeaderFail,
		ErrTimeoutDueToConnectionLost: rpctypes.ErrGRPCTimeoutDueToConnectionLost,
		ErrTimeoutWaitAppliedIndex:    rpctypes.ErrGRPCTimeoutWaitAppliedIndex,
		ErrTooManyRequests:            rpctypes.ErrGRPCRequestTooManyRequests,
		ErrNotSupportedForLearner:     rpctypes.ErrGRPCNotSupportedForLearner,
	} {
		if got := status.Convert(theirs).Message(); got != ours {
			t.Errorf("ours %q, etcd's %q", ours, got)
		}
	}
}

func TestDescriptionUnwraps(t *testing.T) {
	err := fmt.Errorf("adding: %w", rpctypes.ErrGRPCTooManyLearners)
	desc, code, ok := Description(err)
	if !ok || desc != ErrTooManyLearners || code != codes.FailedPrecondition {
		t.Errorf("Description = %q, %v, %v", desc, code, ok)
	}
	if _, _, ok := Description(errors.New("plain")); ok {
		t.Error("a plain error has a description")
	}
}

// TestRequestsAreEtcdsMessages decodes what this package sends with etcd's
// generated code.
func TestRequestsAreEtcdsMessages(t *testing.T) {
	var list etcdserverpb.MemberListRequest
	if err := list.Unmarshal(memberListRequest()); err != nil || !list.Linearizable {
		t.Errorf("MemberListRequest: %+v, %v", list, err)
	}
	var add etcdserverpb.MemberAddRequest
	if err := add.Unmarshal(memberAddRequest([]string{"https://a:2380", "https://b:2380"}, true)); err != nil ||
		!slices.Equal(add.PeerURLs, []string{"https://a:2380", "https://b:2380"}) || !add.IsLearner {
		t.Errorf("MemberAddRequest: %+v, %v", add, err)
	}
	var remove etcdserverpb.MemberRemoveRequest
	if err := remove.Unmarshal(memberIDRequest(0xdeadbeefcafe)); err != nil || remove.ID != 0xdeadbeefcafe {
		t.Errorf("MemberRemoveRequest: %+v, %v", remove, err)
	}
	var rng etcdserverpb.RangeRequest
	if err := rng.Unmarshal(countRequest("k")); err != nil || string(rng.Key) != "k" || !rng.CountOnly ||
		rng.Serializable || len(rng.RangeEnd) != 0 {
		t.Errorf("RangeRequest: %+v, %v", rng, err)
	}
}

// TestAnswersAreDecoded encodes etcd's answers with etcd's generated code.
func TestAnswersAreDecoded(t *testing.T) {
	hdr := &etcdserverpb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 3, RaftTerm: 4}
	a := &etcdserverpb.Member{ID: 7, Name: "cp-a", PeerURLs: []string{"https://a:2380"}, ClientURLs: []string{"https://a:2379"}}
	b := &etcdserverpb.Member{ID: 1<<63 + 9, PeerURLs: []string{"https://b:2380", "https://[fd00::b]:2380"}, IsLearner: true}
	wantA := Member{ID: 7, Name: "cp-a", PeerURLs: []string{"https://a:2380"}, ClientURLs: []string{"https://a:2379"}}
	wantB := Member{ID: 1<<63 + 9, PeerURLs: []string{"https://b:2380", "https://[fd00::b]:2380"}, IsLearner: true}

	raw, _ := (&etcdserverpb.MemberListResponse{Header: hdr, Members: []*etcdserverpb.Member{a, b}}).Marshal()
	h, _, members, err := membersAnswer(raw, 2)
	if err != nil || h != (Header{1, 2, 3, 4}) || !cmp.Equal(members, []Member{wantA, wantB}) {
		t.Errorf("MemberListResponse: %+v %+v %v", h, members, err)
	}
	raw, _ = (&etcdserverpb.MemberAddResponse{Header: hdr, Member: b, Members: []*etcdserverpb.Member{a, b}}).Marshal()
	_, added, members, err := membersAnswer(raw, 3)
	if err != nil || !cmp.Equal(added, wantB) || !cmp.Equal(members, []Member{wantA, wantB}) {
		t.Errorf("MemberAddResponse: %+v %+v %v", added, members, err)
	}

	raw, _ = (&etcdserverpb.StatusResponse{Header: hdr, Version: "3.6.8", DbSize: 20480, Leader: 2, RaftIndex: 11,
		RaftTerm: 3, RaftAppliedIndex: 10, Errors: []string{"NOSPACE", "CORRUPT"}, DbSizeInUse: 16384, IsLearner: true,
		StorageVersion: "3.6.0", DbSizeQuota: 1 << 31}).Marshal()
	st, err := decodeStatus(raw)
	want := &Status{Header: Header{1, 2, 3, 4}, Version: "3.6.8", DBSize: 20480, Leader: 2, RaftIndex: 11, RaftTerm: 3,
		RaftAppliedIndex: 10, Errors: []string{"NOSPACE", "CORRUPT"}, DBSizeInUse: 16384, IsLearner: true}
	if err != nil || !cmp.Equal(st, want) {
		t.Errorf("StatusResponse: %+v, %v", st, err)
	}

	raw, _ = (&etcdserverpb.RangeResponse{Header: hdr, Count: 1}).Marshal()
	if n, err := decodeCount(raw); err != nil || n != 1 {
		t.Errorf("RangeResponse: %d, %v", n, err)
	}

	if _, err := decodeStatus([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("a truncated answer was decoded")
	}
}

// fakeServer serves etcd's API through etcd's generated server code.
type fakeServer struct {
	etcdserverpb.UnimplementedClusterServer
	etcdserverpb.UnimplementedMaintenanceServer
	name   string
	fail   error
	blobs  [][]byte
	listed int
}

func (s *fakeServer) MemberList(context.Context, *etcdserverpb.MemberListRequest) (*etcdserverpb.MemberListResponse, error) {
	s.listed++
	if s.fail != nil {
		return nil, s.fail
	}
	return &etcdserverpb.MemberListResponse{Members: []*etcdserverpb.Member{{ID: 1, Name: s.name}}}, nil
}

func (s *fakeServer) Snapshot(_ *etcdserverpb.SnapshotRequest, stream etcdserverpb.Maintenance_SnapshotServer) error {
	for i, b := range s.blobs {
		if err := stream.Send(&etcdserverpb.SnapshotResponse{Blob: b, Version: "3.6.8", RemainingBytes: uint64(len(s.blobs) - i - 1)}); err != nil {
			return err
		}
	}
	return s.fail
}

// serve starts fake servers, one per name, and returns a client for them.
func serve(t *testing.T, servers map[string]*fakeServer, endpoints ...string) *Client {
	t.Helper()
	listeners := map[string]*bufconn.Listener{}
	for addr, s := range servers {
		l := bufconn.Listen(1 << 20)
		g := grpc.NewServer()
		etcdserverpb.RegisterClusterServer(g, s)
		etcdserverpb.RegisterMaintenanceServer(g, s)
		go func() { _ = g.Serve(l) }()
		t.Cleanup(g.Stop)
		listeners[addr] = l
	}
	c, err := New(endpoints, nil, func(ctx context.Context, addr string) (net.Conn, error) {
		if l := listeners[addr]; l != nil {
			return l.DialContext(ctx)
		}
		return nil, errors.New("connection refused")
	})
	if err != nil {
		t.Fatal(err)
	}
	c.creds = insecure.NewCredentials() // the fake servers speak plain gRPC
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestClientTriesTheNextEndpoint(t *testing.T) {
	b := &fakeServer{name: "b"}
	c := serve(t, map[string]*fakeServer{"b:2379": b}, "https://a:2379", "https://b:2379")
	for range 2 {
		_, members, err := c.MemberList(t.Context())
		if err != nil || len(members) != 1 || members[0].Name != "b" {
			t.Fatalf("MemberList = %+v, %v", members, err)
		}
	}
	if c.current != 1 {
		t.Errorf("the endpoint that answered is not the one tried first next: %d", c.current)
	}

	// An answer of etcd's is returned as it is, and the next call starts
	// at the next endpoint (a learner answers that it serves no such
	// call; another member may).
	b.fail = rpctypes.ErrGRPCNotSupportedForLearner
	_, _, err := c.MemberList(t.Context())
	if desc, _, _ := Description(err); desc != ErrNotSupportedForLearner || b.listed != 3 {
		t.Errorf("MemberList = %v after %d calls to b, want etcd's answer after 3", err, b.listed)
	}
	if c.current != 0 {
		t.Errorf("after a refusal the next call starts at endpoint %d, want 0", c.current)
	}

	// Two members, the first a learner: the second call gets an answer.
	learner := &fakeServer{name: "l", fail: rpctypes.ErrGRPCNotSupportedForLearner}
	voter := &fakeServer{name: "v"}
	lv := serve(t, map[string]*fakeServer{"l:2379": learner, "v:2379": voter}, "https://l:2379", "https://v:2379")
	if _, _, err := lv.MemberList(t.Context()); err == nil {
		t.Fatal("the learner answered")
	}
	if _, members, err := lv.MemberList(t.Context()); err != nil || members[0].Name != "v" {
		t.Errorf("second MemberList = %+v, %v; want the voter's answer", members, err)
	}

	none := serve(t, nil, "https://a:2379", "https://c:2379")
	_, _, err = none.MemberList(t.Context())
	if status.Code(err) != codes.Unavailable {
		t.Errorf("no endpoint reachable: %v, want Unavailable", err)
	}
}

func TestSnapshotStream(t *testing.T) {
	s := &fakeServer{blobs: [][]byte{[]byte("abc"), nil, []byte("defg")}}
	c := serve(t, map[string]*fakeServer{"a:2379": s}, "https://a:2379")
	version, r, err := c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "abcdefg" || version != "3.6.8" {
		t.Errorf("snapshot %q (version %q), %v", got, version, err)
	}

	s.fail = rpctypes.ErrGRPCNoSpace
	_, r, err = c.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	r.Close()
	if status.Code(err) != status.Code(rpctypes.ErrGRPCNoSpace) {
		t.Errorf("a stream that fails: %v", err)
	}
}
