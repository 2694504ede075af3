package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	in := `=== RUN   TestJoin
    harness_test.go:178: [testbed] starting node node1 (10.199.0.11)
=== RUN   TestJoin/worker
    join_test.go:100: joined
=== RUN   TestJoin/reset_every_node
    join_test.go:380: node2: files differ from before init: [/etc/kubernetes/x]
    join_test.go:390: containers left after reset: abc
        def
=== NAME  TestJoin
    harness_test.go:163: ---- end of kubelet.log of node1:
        I1127 kubelet line one
        I1127 kubelet line two
    harness_test.go:178: [testbed] stopping node node1
--- FAIL: TestJoin (186.91s)
    --- PASS: TestJoin/worker (12.35s)
    --- FAIL: TestJoin/reset_every_node (16.91s)
=== RUN   TestOther
    other_test.go:10: fine
--- PASS: TestOther (1.00s)
FAIL
FAIL	github.com/kubeadm-go/kubeadm/test/e2e	1275.416s
FAIL
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, in) {
		t.Fatalf("the input is not passed through unchanged:\n%s", got)
	}
	want := `
== what the 2 failing tests printed (node logs left out; each whole above)
--- FAIL: TestJoin
    harness_test.go:178: [testbed] starting node node1 (10.199.0.11)
    harness_test.go:163: ---- end of kubelet.log of node1: (left out here)
    harness_test.go:178: [testbed] stopping node node1
--- FAIL: TestJoin/reset_every_node
    join_test.go:380: node2: files differ from before init: [/etc/kubernetes/x]
    join_test.go:390: containers left after reset: abc
        def
`
	if summary := strings.TrimPrefix(got, in); summary != want {
		t.Errorf("summary:\n%s\nwant:\n%s", summary, want)
	}
}

func TestRunNoFailure(t *testing.T) {
	in := "=== RUN   TestA\n    a_test.go:1: hi\n--- PASS: TestA (0.00s)\nPASS\nok\tpkg\t0.1s\n"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Errorf("output %q, want the input alone", out.String())
	}
}

func TestSummaryKeepsTheLastLines(t *testing.T) {
	var in strings.Builder
	in.WriteString("=== RUN   TestLong\n")
	for i := range maxLines + 5 {
		in.WriteString("    long_test.go:1: line " + strings.Repeat("x", i%3) + "\n")
	}
	in.WriteString("    long_test.go:2: the last\n--- FAIL: TestLong (1.00s)\n")
	var out bytes.Buffer
	if err := run(strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	summary := strings.TrimPrefix(out.String(), in.String())
	if !strings.Contains(summary, "(6 earlier lines left out)") || !strings.HasSuffix(summary, "the last\n") {
		t.Errorf("summary:\n%s", summary)
	}
	if n := strings.Count(summary, "long_test.go"); n != maxLines {
		t.Errorf("%d lines repeated, want %d", n, maxLines)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("no space left on device")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestRunLongLinesAndFailedOutput(t *testing.T) {
	long := strings.Repeat("x", 20<<20) // longer than any Scanner buffer here
	in := "=== RUN   TestBig\n    big_test.go:1: " + long + "\n--- FAIL: TestBig (1.00s)\nFAIL\n"

	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), in) {
		t.Fatal("a long line was not passed through whole")
	}
	if !strings.Contains(out.String(), "--- FAIL: TestBig\n    big_test.go:1: xxx") || !strings.Contains(out.String(), "(cut)") {
		t.Fatalf("the summary does not repeat the long line, cut: %.200s", out.String()[len(in):])
	}

	r := &countingReader{r: strings.NewReader(in)}
	err := run(r, &failingWriter{n: 10})
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a failed write is not reported: %v", err)
	}
	if r.n != len(in) {
		t.Fatalf("after a failed write, %d of %d bytes of input were read: the writer of the input would meet a closed pipe", r.n, len(in))
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A test binary stopped by -timeout prints no "--- FAIL" line: the tests
// it names as running are the failing ones, and the goroutines' stacks
// after it belong to none of them.
func TestRunTimedOut(t *testing.T) {
	in := "=== RUN   TestA\n    a_test.go:1: done\n--- PASS: TestA (1.00s)\n" +
		"=== RUN   TestSlow\n    slow_test.go:9: waiting for the node\n" +
		"=== RUN   TestSlow/step\n    slow_test.go:20: still waiting\n" +
		"panic: test timed out after 5m0s\n\trunning tests:\n\t\tTestSlow (4m59s)\n\t\tTestSlow/step (4m0s)\n\n" +
		"goroutine 7 [running]:\ntesting.(*M).startAlarm.func1()\n\t/usr/lib/go/src/testing/testing.go:2484 +0x345\n" +
		"FAIL\tpkg\t300.1s\n"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `
== what the 2 failing tests printed (node logs left out; each whole above)
panic: test timed out after 5m0s: the tests still running then are among them
--- FAIL: TestSlow
    slow_test.go:9: waiting for the node
--- FAIL: TestSlow/step
    slow_test.go:20: still waiting
`
	if summary := strings.TrimPrefix(out.String(), in); summary != want {
		t.Errorf("summary:\n%s\nwant:\n%s", summary, want)
	}
}
