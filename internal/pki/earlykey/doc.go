// Package earlykey starts making one RSA-2048 key while the process is
// still starting up, for the commands that will need keys.
//
// Before main runs, Go initialises every package the binary links, one
// after the other on one core: ~15–20 ms for kubeadm, whose libraries
// (client-go's API scheme, etcd's and gRPC's protobuf registries, metrics)
// do a lot at init. The other core idles meanwhile. RSA key generation is
// what the key-making commands spend most of their time on, so this
// package's init — which runs early, as it depends only on the standard
// library — looks at the command line and, for a command that makes keys,
// starts one key on a goroutine. pki.NewPrivateKey takes it (Take) for the
// first RSA-2048 key the command asks for.
//
// The guess is made from the words of the command line alone, before any
// flag or configuration is read: "init" (the whole command, or its certs
// and kubeconfig phases), "join --control-plane", "kubeconfig user" and
// "certs generate-csr", without -h/--help. A wrong guess (a configuration
// asking for ECDSA keys, a node whose keys all exist) costs one key's
// worth of CPU on an otherwise idle core and changes nothing else: the key
// is never used, never written and dies with the process.
//
// This is the one package of the project with package-level state and an
// init side effect; both are needed, as nothing else runs that early.
package earlykey
