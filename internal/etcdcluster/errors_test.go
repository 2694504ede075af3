package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	alive := context.Background()
	tests := []struct {
		name string
		err  error
		want errorKind
	}{
		{"too many learners", rpctypes.ErrGRPCTooManyLearners, kindTooManyLearners},
		{"too many learners wrapped", fmt.Errorf("adding: %w", rpctypes.ErrGRPCTooManyLearners), kindTooManyLearners},
		{"unhealthy cluster", rpctypes.ErrGRPCUnhealthy, kindUnhealthy},
		{"not enough started members", rpctypes.ErrGRPCMemberNotEnoughStarted, kindUnhealthy},
		{"learner not ready", rpctypes.ErrGRPCLearnerNotReady, kindLearnerNotReady},
		{"peer URL exists", rpctypes.ErrGRPCPeerURLExist, kindPeerURLExists},
		{"member not found", rpctypes.ErrGRPCMemberNotFound, kindMemberNotFound},
		{"not a learner", rpctypes.ErrGRPCMemberNotLearner, kindNotLearner},
		{"no leader", rpctypes.ErrGRPCNoLeader, kindTransient},
		{"leader changed", rpctypes.ErrGRPCLeaderChanged, kindTransient},
		{"server timeout", rpctypes.ErrGRPCTimeout, kindTransient},
		{"connection lost", rpctypes.ErrGRPCTimeoutDueToConnectionLost, kindTransient},
		{"learner serves no linearizable read", rpctypes.ErrGRPCNotSupportedForLearner, kindTransient},
		{"unknown unavailable answer", status.Error(codes.Unavailable, "connection error: connection refused"), kindTransient},
		{"one call timed out", context.DeadlineExceeded, kindTransient},
		{"one call timed out, wrapped", fmt.Errorf("listing: %w", context.DeadlineExceeded), kindTransient},
		{"call deadline on the wire", status.Error(codes.DeadlineExceeded, "deadline"), kindTransient},
		{"permission denied", rpctypes.ErrGRPCPermissionDenied, kindFatal},
		{"corrupt cluster", rpctypes.ErrGRPCCorrupt, kindFatal},
		{"bad URLs", rpctypes.ErrGRPCMemberBadURLs, kindFatal},
		{"TLS failure", status.Error(codes.Unauthenticated, "bad certificate"), kindFatal},
		{"plain error", errors.New("no such member"), kindFatal},
		{"caller canceled", context.Canceled, kindFatal},
		{"decided", &classified{kind: kindTransient, err: errors.New("no leader known")}, kindTransient},
		{"decided, wrapped", fmt.Errorf("x: %w", &classified{kind: kindFatal, err: rpctypes.ErrGRPCNoLeader}), kindFatal},
		{"nil", nil, kindFatal},
	}
	for _, tt := range tests {
		if got := classify(alive, tt.err); got != tt.want {
			t.Errorf("%s: classify(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
		// etcd's client hands etcd's answers on as rpctypes.EtcdError
		// values; they mean the same, bare or wrapped.
		if converted := clientv3.ContextError(alive, tt.err); converted != tt.err {
			if got := classify(alive, converted); got != tt.want {
				t.Errorf("%s, as etcd's client returns it: classify(%#v) = %v, want %v", tt.name, converted, got, tt.want)
			}
			if got := classify(alive, fmt.Errorf("calling: %w", converted)); got != tt.want {
				t.Errorf("%s, as etcd's client returns it, wrapped: classify = %v, want %v", tt.name, got, tt.want)
			}
		}
	}
	// The same answers, as etcd's client returns them.
	for err, want := range map[error]errorKind{
		rpctypes.ErrTooManyLearners:        kindTooManyLearners,
		rpctypes.ErrUnhealthy:              kindUnhealthy,
		rpctypes.ErrMemberNotEnoughStarted: kindUnhealthy,
		rpctypes.ErrMemberLearnerNotReady:  kindLearnerNotReady,
		rpctypes.ErrPeerURLExist:           kindPeerURLExists,
		rpctypes.ErrMemberNotFound:         kindMemberNotFound,
		rpctypes.ErrMemberNotLearner:       kindNotLearner,
		rpctypes.ErrNoLeader:               kindTransient,
		rpctypes.ErrTooManyRequests:        kindTransient,
		rpctypes.ErrPermissionDenied:       kindFatal,
		rpctypes.ErrCorrupt:                kindFatal,
	} {
		if _, ok := err.(rpctypes.EtcdError); !ok {
			t.Errorf("%v is a %T, not an rpctypes.EtcdError", err, err)
		}
		if got := classify(alive, err); got != want {
			t.Errorf("classify(%v) = %v, want %v", err, got, want)
		}
	}

	// Once the caller's context is over nothing is worth another try.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{rpctypes.ErrGRPCNoLeader, rpctypes.ErrGRPCTooManyLearners, context.DeadlineExceeded} {
		if got := classify(done, err); got != kindFatal {
			t.Errorf("classify(%v) after the caller's end = %v, want fatal", err, got)
		}
	}
}

func TestRetriedWhileMembersChange(t *testing.T) {
	for k, want := range map[errorKind]bool{
		kindTransient:       true,
		kindTooManyLearners: true,
		kindUnhealthy:       true,
		kindFatal:           false,
		kindLearnerNotReady: false,
		kindPeerURLExists:   false,
		kindMemberNotFound:  false,
		kindNotLearner:      false,
	} {
		if got := retriedWhileMembersChange(k); got != want {
			t.Errorf("retriedWhileMembersChange(%v) = %v, want %v", k, got, want)
		}
	}
}
