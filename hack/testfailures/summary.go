package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// maxLines is how many lines of one failing test the summary repeats, the
// last ones: t.Fatal ends a test, and what led to it comes just before.
const maxLines = 60

// dumpMarker starts a node log that the e2e harness prints for a failed
// test; the summary keeps that line and leaves the log out.
const dumpMarker = "---- end of "

// timeoutPanic starts what a test binary prints when its -timeout passes:
// the tests still running follow, one a line, then every goroutine's stack.
const timeoutPanic = "panic: test timed out after "

// outputs sorts the lines of `go test -v` by the test that printed them.
type outputs struct {
	current string              // the test the next line belongs to
	inDump  bool                // the current message is a node log
	lines   map[string][]string // test name → its lines, node logs left out
	failed  []string            // tests with a "--- FAIL" line, in order
	// timedOut is the timeout's panic line, once seen; running is true
	// while the names of the tests it stopped follow.
	timedOut string
	running  bool
}

func (o *outputs) add(line string) {
	trimmed := strings.TrimLeft(line, " ")
	if o.running {
		// "\t\tTestName (5m0s)" lines, after a "\trunning tests:" one.
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "\t\t") && len(f) > 0:
			if !slices.Contains(o.failed, f[0]) {
				o.failed = append(o.failed, f[0])
			}
			return
		case strings.HasPrefix(line, "\t"):
			return
		}
		o.running = false
	}
	switch {
	case strings.HasPrefix(line, timeoutPanic):
		// The stacks that follow belong to no test.
		o.timedOut, o.running = line, true
		o.current, o.inDump = "", false
		return
	case o.timedOut != "":
		return
	case strings.HasPrefix(line, "=== "):
		// === RUN, === CONT, === NAME and === PAUSE name the test whose
		// output follows.
		o.current, o.inDump = "", false
		if f := strings.Fields(line); len(f) >= 3 && f[1] != "PAUSE" {
			o.current = f[2]
		}
		return
	case strings.HasPrefix(trimmed, "--- "):
		if f := strings.Fields(trimmed); len(f) >= 3 && f[1] == "FAIL:" && !slices.Contains(o.failed, f[2]) {
			o.failed = append(o.failed, f[2])
		}
		o.current, o.inDump = "", false
		return
	case o.current == "" || line == "":
		return
	}
	// A message starts with four spaces and file:line; its further lines
	// are indented by eight.
	if strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     ") {
		o.inDump = strings.Contains(line, dumpMarker)
		if o.inDump {
			line += " (left out here)"
		}
	} else if o.inDump {
		return
	}
	if o.lines == nil {
		o.lines = map[string][]string{}
	}
	o.lines[o.current] = append(o.lines[o.current], line)
}

// summary writes, for each failing test, the last maxLines lines it printed.
func (o *outputs) summary(w io.Writer) {
	if len(o.failed) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== what the %d failing tests printed (node logs left out; each whole above)\n", len(o.failed))
	if o.timedOut != "" {
		fmt.Fprintf(w, "%s: the tests still running then are among them\n", o.timedOut)
	}
	for _, name := range o.failed {
		lines := o.lines[name]
		fmt.Fprintf(w, "--- FAIL: %s\n", name)
		if len(lines) > maxLines {
			fmt.Fprintf(w, "    (%d earlier lines left out)\n", len(lines)-maxLines)
			lines = lines[len(lines)-maxLines:]
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}
