// Command crash stands in for a broken release in the upgrade tests: the
// test bed publishes it under a real image reference (see
// testbed.WriteCrashArchive), and whatever it is started as, with whatever
// arguments, it says on stderr that it fails on purpose and exits with
// status 1, so a Pod of that image never comes up.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	fmt.Fprintf(os.Stderr, "%s: this is the test bed's crashing image; it exits with status 1 on purpose\n", filepath.Base(os.Args[0]))
	os.Exit(1)
}
