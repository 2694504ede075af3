package etcdrpc

import (
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The descriptions etcd gives the answers kubeadm tells apart: the message
// of the gRPC status it sends.
const (
	ErrTooManyLearners            = "etcdserver: too many learner members in cluster"
	ErrUnhealthy                  = "etcdserver: unhealthy cluster"
	ErrMemberNotEnoughStarted     = "etcdserver: re-configuration failed due to not enough started members"
	ErrMemberLearnerNotReady      = "etcdserver: can only promote a learner member which is in sync with leader"
	ErrPeerURLExist               = "etcdserver: Peer URLs already exists"
	ErrMemberNotFound             = "etcdserver: member not found"
	ErrMemberNotLearner           = "etcdserver: can only promote a learner member"
	ErrNoLeader                   = "etcdserver: no leader"
	ErrLeaderChanged              = "etcdserver: leader changed"
	ErrNotCapable                 = "etcdserver: not capable"
	ErrStopped                    = "etcdserver: server stopped"
	ErrTimeout                    = "etcdserver: request timed out"
	ErrTimeoutDueToLeaderFail     = "etcdserver: request timed out, possibly due to previous leader failure"
	ErrTimeoutDueToConnectionLost = "etcdserver: request timed out, possibly due to connection lost"
	ErrTimeoutWaitAppliedIndex    = "etcdserver: request timed out, waiting for the applied index took too long"
	ErrTooManyRequests            = "etcdserver: too many requests"
	ErrNotSupportedForLearner     = "etcdserver: rpc not supported for learner"
)

// Description returns etcd's description (its status message) and the
// gRPC code of the status err is or wraps; ok is false when there is none.
// Unlike status.FromError it gives the status's own message, not the text
// of the errors that wrap it.
func Description(err error) (desc string, code codes.Code, ok bool) {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return "", codes.Unknown, false
	}
	s := se.GRPCStatus()
	return s.Message(), s.Code(), true
}

// unreachable reports whether err says the endpoint could not be reached
// or did not serve the call at all, as opposed to an answer of etcd's
// (which etcd sends with a description, some also as Unavailable).
func unreachable(err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.Unavailable && !strings.HasPrefix(s.Message(), "etcdserver: ")
}
