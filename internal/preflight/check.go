package preflight

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// IgnoreAll, given to --ignore-preflight-errors, ignores every check.
const IgnoreAll = "all"

// parallelism bounds how many checks run at once.
const parallelism = 4

// Check is one preflight check.
type Check struct {
	// Name identifies the check in the output and in
	// --ignore-preflight-errors, for example "Port-6443".
	Name string
	// Run performs the check. It must be safe to call concurrently with the
	// Run of other checks.
	Run func(ctx context.Context) Result
}

// Result is what a check found.
type Result struct {
	// Report, when not empty, is printed before the check's warnings
	// (the system verification prints its table this way).
	Report string
	// Warnings are printed and never fail the run.
	Warnings []error
	// Errors fail the run unless the check is ignored, in which case they
	// are printed as warnings.
	Errors []error
}

// Failure is one error of one check.
type Failure struct {
	Check string
	Err   error
}

// Error reports every error of the checks that were not ignored. Its
// message lists them in the order the checks were given.
type Error struct {
	Failures []Failure
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("[preflight] Some fatal errors occurred:\n")
	for _, f := range e.Failures {
		fmt.Fprintf(&b, "\t[ERROR %s]: %v\n", f.Check, f.Err)
	}
	b.WriteString("[preflight] To make a check report a warning instead of an error, name it in `--ignore-preflight-errors=...` (only if you are sure it does not matter)")
	return b.String()
}

// Checks returns the names of the failed checks, in order, once each.
func (e *Error) Checks() []string {
	var names []string
	seen := sets.New[string]()
	for _, f := range e.Failures {
		if !seen.Has(f.Check) {
			seen.Insert(f.Check)
			names = append(names, f.Check)
		}
	}
	return names
}

// Ignored tells whether the errors of the check named name are to be shown
// as warnings: ignore holds check names in any case, or "all".
func Ignored(ignore sets.Set[string], name string) bool {
	for n := range ignore {
		if strings.EqualFold(n, IgnoreAll) || strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Run executes checks, at most a few at a time, and writes, in the order
// of checks, each check's report to out and its warnings to warn (nil: to
// out; upstream's go to standard error) as "\t[WARNING Name]: message".
// Errors of checks named in ignore (any case, or "all") are written as
// warnings too. Output of a check is written as soon as it and every check
// before it have finished.
//
// It returns nil when no error remains, or an *Error holding all of them.
// Run itself changes nothing; it is as idempotent as the checks it runs.
func Run(ctx context.Context, checks []Check, ignore sets.Set[string], out, warn io.Writer) error {
	if warn == nil {
		warn = out
	}
	results := make([]Result, len(checks))
	done := make([]bool, len(checks))
	var (
		mu       sync.Mutex
		next     int // first check whose output is not written yet
		failures []Failure
	)
	flush := func() {
		for next < len(checks) && done[next] {
			c, r := checks[next], results[next]
			if r.Report != "" {
				io.WriteString(out, r.Report)
				if !strings.HasSuffix(r.Report, "\n") {
					io.WriteString(out, "\n")
				}
			}
			for _, w := range r.Warnings {
				fmt.Fprintf(warn, "\t[WARNING %s]: %v\n", c.Name, w)
			}
			ignored := Ignored(ignore, c.Name)
			for _, e := range r.Errors {
				if ignored {
					fmt.Fprintf(warn, "\t[WARNING %s]: %v\n", c.Name, e)
					continue
				}
				failures = append(failures, Failure{Check: c.Name, Err: e})
			}
			next++
		}
	}

	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	for i := range checks {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := runOne(ctx, checks[i])
			mu.Lock()
			defer mu.Unlock()
			results[i], done[i] = r, true
			flush()
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		return &Error{Failures: failures}
	}
	return nil
}

// runOne runs a check, turning a panic into an error of that check so one
// broken check cannot take the others down.
func runOne(ctx context.Context, c Check) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Errors: []error{fmt.Errorf("the check panicked: %v", p)}}
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{Errors: []error{err}}
	}
	start := time.Now()
	defer func() {
		klog.V(2).Infof("[preflight] check %s took %v", c.Name, time.Since(start).Round(time.Millisecond))
	}()
	return c.Run(ctx)
}

// warn and fail build the usual one-message results.
func warn(format string, args ...any) Result {
	return Result{Warnings: []error{fmt.Errorf(format, args...)}}
}

func fail(format string, args ...any) Result {
	return Result{Errors: []error{fmt.Errorf(format, args...)}}
}
