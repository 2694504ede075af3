package apiclient

import (
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// Against a cluster the calls run at once: each waits for all the others
// to have started.
func TestTogetherRunsCallsAtOnce(t *testing.T) {
	const n = 4
	var started sync.WaitGroup
	started.Add(n)
	calls := make([]func() error, n)
	for i := range calls {
		calls[i] = func() error {
			started.Done()
			done := make(chan struct{})
			go func() { started.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				return errors.New("the other calls did not start")
			}
			if i == 2 {
				return errors.New("third")
			}
			return nil
		}
	}
	errs := Together(fake.NewClientset(), calls...)
	for i, err := range errs {
		if (i == 2) != (err != nil) || (err != nil && err.Error() != "third") {
			t.Errorf("call %d: error %v", i, err)
		}
	}
	if err := FirstError(errs); err == nil || err.Error() != "third" {
		t.Errorf("FirstError: %v, want the third call's", err)
	}
}

// Through a dry-run client they run one after the other, in order, so its
// output keeps that order.
func TestTogetherDryRunInOrder(t *testing.T) {
	var order []int
	calls := make([]func() error, 5)
	for i := range calls {
		calls[i] = func() error { order = append(order, i); return nil }
	}
	errs := Together(DryRunClient(io.Discard, nil), calls...)
	if FirstError(errs) != nil {
		t.Fatal(errs)
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("calls ran in the order %v", order)
		}
	}
}
