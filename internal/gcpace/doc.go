// Package gcpace lets the garbage collector run less often while a kubeadm
// process starts, and at Go's usual pace afterwards.
//
// A kubeadm process allocates a few MiB while its libraries initialise and
// it reads its configuration, keeping about half: at Go's default pace
// (GOGC=100, a collection whenever the heap doubles over a 4 MiB minimum)
// that is three or four collections in the first 60 ms, each marking the
// same registries again, and a command such as `init phase etcd local` is
// over soon after. This package's init sets the pace to GOGC=400 (a
// collection when the heap reaches five times what the previous one left),
// and Go's default comes back:
//
//   - when the process starts making RSA keys (Steady, called by package
//     pki): key generation makes garbage at a steady rate for as long as
//     it runs, and at the start-up pace the process's peak memory would
//     grow;
//   - in any case window after the init, so that a process that runs for
//     long (init waiting for its control plane, join, upgrade) holds no
//     more memory than at Go's default pace.
//
// A GOGC set in the environment is the user's choice: the package then
// changes nothing. The init runs at ≈ 30 ms, once runtime/debug's
// dependencies are initialised: after the first collection or two, before
// the others. Measured with hack/benchoffline on the 2-core test VM
// against the same tree without it (25 rounds): etcd local 68 → 58 ms,
// control-plane all 72 → 60 ms, certs all 414 → 361 ms, all four 0.80 →
// 0.70 s of wall and 1.29 → 1.13 s of CPU, peak memory 40.9 → 40.6 MiB.
// Keeping the start-up pace while keys are made saved a little more wall
// but cost up to 3 MiB of peak memory.
//
// Like startmem, the package is imported by main for the side effect of its
// init (pki imports it for Steady); it keeps no state: setting the default
// pace again is harmless.
package gcpace
