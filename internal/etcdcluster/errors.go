package etcdcluster

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrOnlyVoter is returned by RemoveByName and RemoveByPeerURL for the
// cluster's only voting member: without it there is no cluster left to
// remove it from. A caller resetting the last control-plane node skips the
// removal and just deletes the member's data.
var ErrOnlyVoter = errors.New("the member is the only voting member of the etcd cluster")

// errorKind is what an answer of etcd means for the operation that got it.
type errorKind int

const (
	// kindFatal: retrying will not help.
	kindFatal errorKind = iota
	// kindTransient: the request did not get through or etcd was briefly
	// unable to serve it (no leader, leader changed, connection lost, one
	// call timed out).
	kindTransient
	// kindTooManyLearners: etcd already has as many learners as it allows
	// (one by default); another node is joining.
	kindTooManyLearners
	// kindUnhealthy: the change would leave too few started members for a
	// quorum right now.
	kindUnhealthy
	// kindLearnerNotReady: the learner has not caught up with the leader.
	kindLearnerNotReady
	// kindPeerURLExists: a member with that peer URL is already announced.
	kindPeerURLExists
	// kindMemberNotFound: no member has that ID.
	kindMemberNotFound
	// kindNotLearner: the member to promote already votes.
	kindNotLearner
)

func (k errorKind) String() string {
	switch k {
	case kindTransient:
		return "transient"
	case kindTooManyLearners:
		return "too many learners"
	case kindUnhealthy:
		return "unhealthy cluster"
	case kindLearnerNotReady:
		return "learner not ready"
	case kindPeerURLExists:
		return "peer URL exists"
	case kindMemberNotFound:
		return "member not found"
	case kindNotLearner:
		return "not a learner"
	}
	return "fatal"
}

// retriedWhileMembersChange is what every membership change retries:
// answers that another change in flight or a short outage explains.
func retriedWhileMembersChange(k errorKind) bool {
	return k == kindTransient || k == kindTooManyLearners || k == kindUnhealthy
}

// kindOfDescription maps the descriptions etcd gives its answers (the
// messages of rpctypes' errors) to their meaning here.
func kindOfDescription(desc string) (errorKind, bool) {
	switch desc {
	case rpctypes.ErrTooManyLearners.Error():
		return kindTooManyLearners, true
	case rpctypes.ErrUnhealthy.Error(), rpctypes.ErrMemberNotEnoughStarted.Error():
		return kindUnhealthy, true
	case rpctypes.ErrMemberLearnerNotReady.Error():
		return kindLearnerNotReady, true
	case rpctypes.ErrPeerURLExist.Error():
		return kindPeerURLExists, true
	case rpctypes.ErrMemberNotFound.Error():
		return kindMemberNotFound, true
	case rpctypes.ErrMemberNotLearner.Error():
		return kindNotLearner, true
	case rpctypes.ErrNoLeader.Error(), rpctypes.ErrLeaderChanged.Error(), rpctypes.ErrNotCapable.Error(),
		rpctypes.ErrStopped.Error(), rpctypes.ErrTimeout.Error(), rpctypes.ErrTimeoutDueToLeaderFail.Error(),
		rpctypes.ErrTimeoutDueToConnectionLost.Error(), rpctypes.ErrTimeoutWaitAppliedIndex.Error(),
		rpctypes.ErrTooManyRequests.Error(),
		// A learner serves no linearizable read; the next request goes to
		// another endpoint.
		rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner):
		return kindTransient, true
	}
	return kindFatal, false
}

// description returns etcd's description of the answer err is or wraps
// and its gRPC code: etcd's client turns the answers it knows into
// rpctypes.EtcdError values, and passes others on as gRPC status errors.
// Unlike status.FromError it gives the status's own message, not the text
// of the errors that wrap it. ok is false when err is neither.
func description(err error) (desc string, code codes.Code, ok bool) {
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return etcdErr.Error(), etcdErr.Code(), true
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		s := se.GRPCStatus()
		return s.Message(), s.Code(), true
	}
	return "", codes.Unknown, false
}

// classify tells what err, the result of one call made with a context
// derived from parent, means. A call that ran out of its own time while
// parent still has time is transient; parent's end is fatal.
func classify(parent context.Context, err error) errorKind {
	if err == nil {
		return kindFatal
	}
	if parent.Err() != nil {
		return kindFatal
	}
	var decided *classified
	if errors.As(err, &decided) {
		return decided.kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kindTransient
	}
	if desc, code, ok := description(err); ok {
		if k, ok := kindOfDescription(desc); ok {
			return k
		}
		return kindOfCode(code)
	}
	return kindFatal
}

// kindOfCode classifies a gRPC status that etcd gave no known description.
func kindOfCode(c codes.Code) errorKind {
	switch c {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return kindTransient
	}
	return kindFatal
}
