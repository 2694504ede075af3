package preflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

func staticCheck(name string, r Result) Check {
	return Check{Name: name, Run: func(context.Context) Result { return r }}
}

func TestRunReportsEveryFailureInOrder(t *testing.T) {
	checks := []Check{
		staticCheck("NumCPU", fail("too few CPUs")),
		staticCheck("Swap", warn("swap is on")),
		staticCheck("Port-6443", fail("Port 6443 is in use")),
		staticCheck("Hostname", Result{Warnings: []error{errors.New("first"), errors.New("second")}}),
		staticCheck("FileContent--proc-sys-net-ipv4-ip_forward", fail("not set")),
		staticCheck("Mem", Result{}),
	}
	var out, warnings bytes.Buffer
	err := Run(context.Background(), checks, nil, &out, &warnings)
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Run() = %v, want an *Error", err)
	}
	wantWarnings := "\t[WARNING Swap]: swap is on\n\t[WARNING Hostname]: first\n\t[WARNING Hostname]: second\n"
	if warnings.String() != wantWarnings {
		t.Errorf("warnings:\n%s\nwant:\n%s", warnings.String(), wantWarnings)
	}
	if out.Len() > 0 {
		t.Errorf("output %q, want the warnings apart from it", out.String())
	}
	wantErr := "[preflight] Some fatal errors occurred:\n" +
		"\t[ERROR NumCPU]: too few CPUs\n" +
		"\t[ERROR Port-6443]: Port 6443 is in use\n" +
		"\t[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: not set\n" +
		"[preflight] To make a check report a warning instead of an error, name it in `--ignore-preflight-errors=...` (only if you are sure it does not matter)"
	if err.Error() != wantErr {
		t.Errorf("error:\n%s\nwant:\n%s", err, wantErr)
	}
	if got, want := strings.Join(pe.Checks(), ","), "NumCPU,Port-6443,FileContent--proc-sys-net-ipv4-ip_forward"; got != want {
		t.Errorf("Checks() = %s, want %s", got, want)
	}
}

func TestRunIgnore(t *testing.T) {
	checks := []Check{
		staticCheck("Port-6443", fail("Port 6443 is in use")),
		staticCheck("Swap", warn("swap is on")),
		staticCheck("SystemVerification", Result{Report: "KERNEL_VERSION: 6.1\n", Errors: []error{errors.New("cgroup v1")}}),
	}
	tests := []struct {
		name       string
		ignore     []string
		wantErrs   []string // names of failed checks
		wantOutput string
	}{
		{
			name:       "nothing ignored",
			wantErrs:   []string{"Port-6443", "SystemVerification"},
			wantOutput: "\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n",
		},
		{
			name:       "by name, any case",
			ignore:     []string{"port-6443", "SYSTEMVERIFICATION"},
			wantOutput: "\t[WARNING Port-6443]: Port 6443 is in use\n\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n\t[WARNING SystemVerification]: cgroup v1\n",
		},
		{
			name:       "one of two",
			ignore:     []string{"Port-6443"},
			wantErrs:   []string{"SystemVerification"},
			wantOutput: "\t[WARNING Port-6443]: Port 6443 is in use\n\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n",
		},
		{
			name:       "all",
			ignore:     []string{"all"},
			wantOutput: "\t[WARNING Port-6443]: Port 6443 is in use\n\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n\t[WARNING SystemVerification]: cgroup v1\n",
		},
		{
			name:       "ALL",
			ignore:     []string{"ALL"},
			wantOutput: "\t[WARNING Port-6443]: Port 6443 is in use\n\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n\t[WARNING SystemVerification]: cgroup v1\n",
		},
		{
			name:       "a prefix is not a name",
			ignore:     []string{"Port"},
			wantErrs:   []string{"Port-6443", "SystemVerification"},
			wantOutput: "\t[WARNING Swap]: swap is on\nKERNEL_VERSION: 6.1\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(context.Background(), checks, sets.New(tt.ignore...), &out, nil)
			var got []string
			var pe *Error
			if errors.As(err, &pe) {
				got = pe.Checks()
			} else if err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantErrs, ",") {
				t.Errorf("failed checks = %v, want %v", got, tt.wantErrs)
			}
			if out.String() != tt.wantOutput {
				t.Errorf("output:\n%q\nwant:\n%q", out.String(), tt.wantOutput)
			}
		})
	}
}

func TestRunIsConcurrentButOrdered(t *testing.T) {
	const n = 12
	var running, peak atomic.Int32
	var checks []Check
	for i := range n {
		checks = append(checks, Check{Name: fmt.Sprintf("C%02d", i), Run: func(context.Context) Result {
			cur := running.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			// Later checks finish first.
			time.Sleep(time.Duration(n-i) * 3 * time.Millisecond)
			running.Add(-1)
			return Result{Warnings: []error{fmt.Errorf("w%02d", i)}, Errors: []error{fmt.Errorf("e%02d", i)}}
		}})
	}
	var out bytes.Buffer
	err := Run(context.Background(), checks, nil, &out, nil)
	var want, wantErr strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "\t[WARNING C%02d]: w%02d\n", i, i)
		fmt.Fprintf(&wantErr, "\t[ERROR C%02d]: e%02d\n", i, i)
	}
	if out.String() != want.String() {
		t.Errorf("output out of order:\n%s", out.String())
	}
	if !strings.Contains(err.Error(), wantErr.String()) {
		t.Errorf("errors out of order:\n%s", err)
	}
	if p := peak.Load(); p < 2 || p > parallelism {
		t.Errorf("peak concurrency %d, want between 2 and %d", p, parallelism)
	}
}

func TestRunSurvivesAPanic(t *testing.T) {
	checks := []Check{
		{Name: "Broken", Run: func(context.Context) Result { panic("boom") }},
		staticCheck("Fine", Result{}),
	}
	err := Run(context.Background(), checks, nil, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "[ERROR Broken]: the check panicked: boom") {
		t.Errorf("Run() = %v", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	checks := []Check{{Name: "X", Run: func(context.Context) Result { ran = true; return Result{} }}}
	err := Run(ctx, checks, nil, &bytes.Buffer{}, nil)
	if err == nil || ran {
		t.Errorf("Run() on a cancelled context = %v (ran: %v), want an error and no check run", err, ran)
	}
}

func TestRunNothingToReport(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), nil, nil, &out, nil); err != nil || out.Len() > 0 {
		t.Errorf("Run(no checks) = %v, output %q", err, out.String())
	}
}
