//go:build linux && (amd64 || arm64)

package startmem

import (
	"os"
	"runtime"
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
// marks its first huge bytes for transparent huge pages, drops it and
// collects at once, while the heap is still small (a fraction of a
// millisecond): the region is free before anything else is allocated, so
// what follows lands in it, from its start. Left to the collector's own
// pace, the region stays allocated while a collection runs alongside the
// package inits, and those allocations grow the heap above it, in 4 KiB
// pages, more or fewer from one run to the next.
func hugeHeapRegion(size, huge int) {
	region := make([]byte, size)
	madvise(uintptr(unsafe.Pointer(unsafe.SliceData(region))), uintptr(min(huge, size)), madvHugepage)
	runtime.GC() // region is dead here: this collection frees it
}
