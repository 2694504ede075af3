// Package earlykey starts making one RSA key while the process is still
// starting up, for the commands that will need keys.
//
// Before main runs, Go initialises every package the binary links, one
// after the other on one core: ~15–20 ms for kubeadm, whose libraries
// (client-go's API scheme, gRPC's protobuf registry, metrics)
// do a lot at init. The other core idles meanwhile. RSA key generation is
// what the key-making commands spend most of their time on, so this
// package's init — which runs early, as it depends only on the standard
// library — looks at the command line and, for a command that makes keys,
// starts one key on a goroutine. pki.NewPrivateKey takes it (Take) for the
// first RSA key of that size the command asks for.
//
// The guess is made from the words of the command line, before cobra
// reads any flag: "init" (the whole command, or its certs and kubeconfig
// phases), "join --control-plane", "kubeconfig user" and "certs
// generate-csr", without -h/--help; and, when --config names a file, from
// a look at its text for the key size its encryptionAlgorithm asks for
// (RSA-2048 when it says nothing; no key ahead for ECDSA, whose keys cost
// next to nothing, nor for v1beta3's PublicKeysECDSA feature gate). No key
// is made ahead either when every key file and kubeconfig file the command
// could write is already there (a re-run, which reuses them), in the
// folders --cert-dir, --kubeconfig-dir, the file's certificatesDir and
// --rootfs name. A wrong guess (a file there but expired, an algorithm
// that comes from the cluster) costs one key's worth of CPU, shared with
// the command's own work, and changes nothing else: the key is never used,
// never written and dies with the process.
//
// This is the one package of the project with package-level state and an
// init side effect; both are needed, as nothing else runs that early.
package earlykey
