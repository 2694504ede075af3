package apiclient

import (
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
// A caller that reports progress step by step does so once Together has
// returned, in order, stopping at the first error: its output is then the
// same as if the calls had run one after the other, and only what the
// cluster holds after a failure can differ (later calls were made too).
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

// FirstError returns the first error of errs that is not nil.
func FirstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// dryRunClientset is the clientset DryRunClient returns; Together knows it
// by its type.
type dryRunClientset struct{ *kubernetes.Clientset }
