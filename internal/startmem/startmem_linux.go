//go:build linux && (amd64 || arm64)

package startmem

import (
	"os"
	"syscall"
	"unsafe"
)

// The madvise advice values of Linux's generic mman-common.h (amd64 and
// arm64 use it). The syscall package has neither, and golang.org/x/sys/unix,
// which has both, is initialised late: depending on it would make this
// package's init run after most of the others.
const (
	madvHugepage      = 14
	madvPopulateWrite = 23
)

func madvise(start, length uintptr, advice int) {
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, length, uintptr(advice))
}

// prefaultData faults in the executable's writable data segment at once.
func prefaultData() {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	start, length, ok := writableSegment(maps)
	if !ok {
		return
	}
	// The segment is the binary's own, not Go heap memory: the raw call
	// takes its bounds as numbers.
	madvise(start, length, madvPopulateWrite)
}

// hugeHeapRegion has the runtime map a fresh heap region of size bytes,
// marks it for transparent huge pages and drops it: the collection its
// allocation starts frees it for the allocations that follow.
func hugeHeapRegion(size int) {
	region := make([]byte, size)
	madvise(uintptr(unsafe.Pointer(unsafe.SliceData(region))), uintptr(len(region)), madvHugepage)
}
