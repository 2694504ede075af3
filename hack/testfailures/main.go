// Command testfailures passes the output of `go test -v` from its standard
// input to its standard output unchanged and, when some test failed,
// repeats at the end what each failing test printed.
//
// CI keeps only the end of a long run's output. An end-to-end test that
// fails early is followed by many minutes of other tests, and by the node
// logs its cluster prints when it is torn down, so its own message is long
// gone from that end. The summary brings it back: for each test named in a
// "--- FAIL" line, the lines printed under its name, without the node log
// dumps (their header line is kept) and at most maxLines of them.
//
//	go test -v ./test/e2e/ 2>&1 | go run ./hack/testfailures
//
// Its exit status is 0; with `set -o pipefail` the pipeline's is go test's.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testfailures:", err)
	}
}

// run copies in to out line by line, then writes the summary of failures.
func run(in io.Reader, out io.Writer) error {
	var o outputs
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if err := w.Flush(); err != nil {
			return err
		}
		o.add(line)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	o.summary(w)
	return w.Flush()
}
