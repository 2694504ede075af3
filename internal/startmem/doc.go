// Package startmem makes the memory work of kubeadm's start-up cheaper.
//
// Before main runs, Go initialises every package the binary links
// (client-go's API scheme, gRPC's protobuf registry, metrics):
// a few MiB of heap and most of the binary's data segment are touched for
// the first time, in 4 KiB pages. On a virtual machine each of those page
// faults is expensive (on the test machine they were ~45 % of the time of
// `kubeadm version`), and start-up is most of the time of a command such as
// `init phase etcd local`. This package's init, which runs early as it
// depends on the standard library's first packages only:
//
//   - pre-faults the executable's writable data segment in one madvise
//     (MADV_POPULATE_WRITE) instead of one copy-on-write fault per page;
//   - has the runtime map a 32 MiB heap region, marks its first 8 MiB
//     MADV_HUGEPAGE, drops it and collects at once (the heap is ~1 MiB
//     then): the allocations that follow land in the region, from its
//     start, in transparent huge pages where the host offers them (the
//     region is never touched before, so it costs address space, not
//     memory). Without the explicit collection, whether they landed there
//     depended on the timing of the one the region's size starts: the same
//     code in another build took ~2400 faults and 59 ms for `init phase
//     etcd local` instead of ~1450 and 49-52 ms.
//
// Every step is best effort; where the kernel lacks a feature nothing
// changes. main imports the package for this side effect only.
//
// Measured with hack/benchoffline, the same tree with and without it, on
// the 2-core test VM: ~5-20 ms less per kubeadm process (`init phase etcd
// local` 76 to 64 ms), peak memory +1-2 MiB. The collector's pace during
// start-up is package gcpace's: it needs runtime/debug, whose dependencies
// would make this init run late.
//
// Like earlykey, this package has an init side effect; nothing else runs
// that early.
package startmem
