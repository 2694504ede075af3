package pki

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkCertsAll measures creating the whole tree of a control-plane
// node (three CAs, seven leaves, the service-account key) with real
// RSA-2048 keys, with the keys made on one goroutine and on GOMAXPROCS.
func BenchmarkCertsAll(b *testing.B) {
	cfg := testConfig()
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(b.TempDir(), strconv.Itoa(i))
				if _, _, err := EnsureAll(b.Context(), cfg, dir, Options{}, workers); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
