package main

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// keyPhases is how many RSA-2048 keys each invocation that makes keys
// makes in a fresh root: eleven in certs all (the certificates and the
// service-account key), five in kubeconfig all.
var keyPhases = []int{11, 5}

// keysFlag is the hidden flag that makes the bench a bare key maker (see
// makeKeys).
const keysFlag = "make-keys"

// probe measures what the machine allows right now: for each phase with
// keys, a fresh process of this program makes that many RSA-2048 keys at
// once on both cores, with the crypto/rsa both binaries use, and nothing
// else. A key is the smallest piece of work (crypto/rsa searches the two
// primes of one key one after the other), so this includes each phase's
// wait for its last key. It returns the summed wall and CPU time.
func probe(self string) (sample, error) {
	var total sample
	for _, n := range keyPhases {
		cmd := exec.Command(self, "-"+keysFlag, strconv.Itoa(n))
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return sample{}, fmt.Errorf("key probe: %w\n%s", err, out)
		}
		total.wall += time.Since(start)
		total.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return total, nil
}

// makeKeys makes n RSA-2048 keys at once, one goroutine each.
func makeKeys(n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := rsa.GenerateKey(rand.Reader, 2048); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		})
	}
	wg.Wait()
}

// ceiling estimates the best wall speed-up over upstream that two cores
// allow in this run. Upstream makes its keys one after the other, which is
// most of its wall; the rest is four start-ups, signing and writing. The
// best a two-core program can do is make each phase's keys at once on both
// cores (keys, from probe), share the cores between those keys and its own
// start-up in the two phases with keys (which then cost half their wall),
// and pay the whole wall of the two invocations without keys (noKeys,
// about two start-ups: their own work is a few milliseconds; so the two
// shared start-ups cost noKeys/2).
func ceiling(upstreamWall, keys, noKeys time.Duration) float64 {
	return upstreamWall.Seconds() / (keys + noKeys + noKeys/2).Seconds()
}
