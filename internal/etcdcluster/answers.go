package etcdcluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Bounded runs req, one request to etcd through a client NewV3Client
// made, with a context that ends after timeout. etcd's client waits for a
// member to answer until then, and a request that runs out of time says
// only "context deadline exceeded"; the error then also tells what the
// last attempt got (a refused connection, a failed TLS handshake, etcd's
// answer), still matching context.DeadlineExceeded with errors.Is.
func Bounded(ctx context.Context, timeout time.Duration, req func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := &lastAnswer{}
	err := req(context.WithValue(ctx, lastAnswerKey{}, last))
	return last.explain(err)
}

// lastAnswerKey is the context key of a call's lastAnswer.
type lastAnswerKey struct{}

// lastAnswer holds the error of the last attempt of a call: etcd's client
// tries a call again while members cannot be reached.
type lastAnswer struct {
	mu  sync.Mutex
	err error
}

// recordAnswers is a gRPC interceptor that notes the error of every
// attempt of a call in the call's lastAnswer, if it has one. It runs
// inside etcd's client's own retrying interceptor, so it sees each
// attempt.
func recordAnswers(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if a, ok := ctx.Value(lastAnswerKey{}).(*lastAnswer); ok && err != nil {
		a.mu.Lock()
		a.err = err
		a.mu.Unlock()
	}
	return err
}

// explain adds to err, when it says that the call ran out of time, what
// the last attempt got.
func (a *lastAnswer) explain(err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	a.mu.Lock()
	last := a.err
	a.mu.Unlock()
	if last == nil {
		return err
	}
	msg := last.Error()
	if s, ok := status.FromError(last); ok {
		msg = s.Message()
	}
	if msg == "" || msg == err.Error() {
		return err
	}
	return &timedOut{err: err, last: msg}
}

// timedOut is a call that ran out of time, with what its last attempt
// got.
type timedOut struct {
	err  error
	last string
}

func (e *timedOut) Error() string { return e.err.Error() + " (last attempt: " + e.last + ")" }
func (e *timedOut) Unwrap() error { return e.err }
