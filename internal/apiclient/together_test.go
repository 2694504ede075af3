package apiclient

import (
	"errors"
	"io"
	"strings"
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

// TogetherReported prints as if the calls ran one after the other, each
// reported before it runs, up to the first failure: through a dry-run
// client each report comes right before its call; against a cluster the
// reports come once all calls have ended.
func TestTogetherReported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dry    bool
		failAt int // -1: none
		want   string
	}{
		{name: "dry run", dry: true, failAt: -1, want: "r0 c0 r1 c1 r2 c2"},
		{name: "dry run, second fails", dry: true, failAt: 1, want: "r0 c0 r1 c1"},
		{name: "cluster", failAt: -1, want: "r0 r1 r2"},
		{name: "cluster, second fails", failAt: 1, want: "r0 r1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
			c := DryRunClient(io.Discard, nil)
			if !tc.dry {
				c = fake.NewClientset()
			}
			calls := make([]func() error, 3)
			for i := range calls {
				calls[i] = func() error {
					if tc.dry {
						note("c" + string(rune('0'+i)))
					}
					if i == tc.failAt {
						return errors.New("failed")
					}
					return nil
				}
			}
			err := TogetherReported(c, func(i int) { note("r" + string(rune('0'+i))) }, calls...)
			if (err != nil) != (tc.failAt >= 0) {
				t.Errorf("error %v", err)
			}
			if got := strings.Join(events, " "); got != tc.want {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// WriteTogether names the write that failed first.
func TestWriteTogether(t *testing.T) {
	err := WriteTogether(fake.NewClientset(), "creating or updating",
		Write{What: "ConfigMap a/b", Do: func() error { return nil }},
		Write{What: "Role a/c", Do: func() error { return errors.New("forbidden") }},
		Write{What: "RoleBinding a/d", Do: func() error { return errors.New("also forbidden") }},
	)
	if err == nil || err.Error() != "creating or updating Role a/c: forbidden" {
		t.Errorf("error %v, want the Role's", err)
	}
}
