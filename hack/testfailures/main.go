// Command testfailures passes the output of `go test -v` from its standard
// input to its standard output unchanged and, when some test failed,
// repeats at the end what each failing test printed.
//
// CI keeps only the end of a long run's output. An end-to-end test that
// fails early is followed by many minutes of other tests, and by the node
// logs its cluster prints when it is torn down, so its own message is long
// gone from that end. The summary brings it back: for each test named in a
// "--- FAIL" line, the lines printed under its name, without the node log
// dumps (their header line is kept) and at most maxLines of them. A test
// binary stopped by its -timeout names the tests it stopped: they count
// as failing, and the goroutine stacks that follow are left out.
//
//	go test -v ./test/e2e/ 2>&1 | go run ./hack/testfailures
//
// Its exit status is 0 when everything was passed on; with `set -o
// pipefail` the pipeline's is then go test's. It reads its input to the
// end whatever happens: lines of any length are passed on whole, and once
// its output fails (a full disk, a closed pipe) it keeps reading and
// drops the rest, so that go test is not killed by a broken pipe before
// its tests' cleanups have removed their clusters; it then exits 1.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	// A closed pipe is then an error of the write, not the end of the
	// program (see run).
	signal.Ignore(syscall.SIGPIPE)
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testfailures:", err)
		os.Exit(1)
	}
}

// maxKept is the length at which a line is cut in the summary; the line
// itself is passed on whole.
const maxKept = 64 * 1024

// run copies in to out line by line, then writes the summary of failures.
// After a failed write it reads in to its end and returns that error.
func run(in io.Reader, out io.Writer) error {
	var o outputs
	r := bufio.NewReaderSize(in, 64*1024)
	w := bufio.NewWriter(out)
	var werr error
	ended := true // the last line passed on ended with a newline
	for {
		line, rerr := r.ReadString('\n')
		if line != "" && werr == nil {
			if _, werr = w.WriteString(line); werr == nil {
				werr = w.Flush()
			}
		}
		if line != "" {
			ended = strings.HasSuffix(line, "\n")
			kept := strings.TrimSuffix(line, "\n")
			if len(kept) > maxKept {
				kept = kept[:maxKept] + " (cut)"
			}
			o.add(kept)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return errors.Join(rerr, werr)
		}
	}
	if werr != nil {
		return fmt.Errorf("writing the output (the rest of the input was read and dropped): %w", werr)
	}
	if !ended {
		// The summary starts on a line of its own.
		fmt.Fprintln(w)
	}
	o.summary(w)
	return w.Flush()
}
