//go:build !linux || !(amd64 || arm64)

package startmem

func prefaultData() {}

func hugeHeapRegion(int, int) {}
