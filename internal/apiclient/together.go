package apiclient

import (
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// Together runs calls made through c that do not depend on one another and
// returns their errors in the order of calls (nil where a call succeeded).
// Against an API server the calls run at once: a write waits mostly for
// etcd to commit it, and etcd commits concurrent writes together, so a
// phase's handful of objects takes about as long as one. Against a dry-run
// client (DryRunClient) they run one after the other, in order, so that
// what it prints keeps that order.
//
// When a call fails, the calls after it in the list have been made too,
// where one after the other they would not have been. Callers with a
// progress line per call use TogetherReported.
func Together(c kubernetes.Interface, calls ...func() error) []error {
	errs := make([]error, len(calls))
	if _, dry := c.(dryRunClientset); dry || len(calls) < 2 {
		for i, call := range calls {
			errs[i] = call()
		}
		return errs
	}
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	wg.Wait()
	return errs
}

// TogetherReported is Together for calls that each have a progress line:
// report(i) prints the line of calls[i]. The output is that of the calls
// made one after the other, each reported before it runs, up to the first
// that failed, whose error is returned: against an API server the calls
// run at once and are reported once all have ended; through a dry-run
// client each is reported, then run, so that its line comes before what
// the dry run prints of it.
func TogetherReported(c kubernetes.Interface, report func(i int), calls ...func() error) error {
	if _, dry := c.(dryRunClientset); dry {
		for i, call := range calls {
			report(i)
			if err := call(); err != nil {
				return err
			}
		}
		return nil
	}
	errs := Together(c, calls...)
	for i, err := range errs {
		report(i)
		if err != nil {
			return err
		}
	}
	return nil
}

// Write is one named write for WriteTogether.
type Write struct {
	What string // the object, as "Kind namespace/name"
	Do   func() error
}

// WriteTogether makes writes with Together and returns the error of the
// first one that failed, as "<verb> <What>: <error>" (verb: "creating or
// updating", say).
func WriteTogether(c kubernetes.Interface, verb string, writes ...Write) error {
	calls := make([]func() error, len(writes))
	for i, w := range writes {
		calls[i] = func() error {
			if err := w.Do(); err != nil {
				return fmt.Errorf("%s %s: %w", verb, w.What, err)
			}
			return nil
		}
	}
	return FirstError(Together(c, calls...))
}

// FirstError returns the first error of errs that is not nil.
func FirstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// dryRunClientset is the client DryRunClient returns; Together knows it
// by its type.
type dryRunClientset struct{ kubernetes.Interface }
