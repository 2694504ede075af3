// Package boundedread holds the size limits of everything kubeadm reads
// from a file or from the network, and the readers that enforce them. It is
// the one way the product reads a whole file or a whole body into memory
// (test/arch checks that nothing calls os.ReadFile or io.ReadAll directly),
// so that no input, hostile or mistaken, can make kubeadm hold more than a
// known amount of it.
//
// The limits, each far above what a legitimate input needs:
//
//   - MaxFile (10 MiB): any file, whether the user wrote it (configuration
//     files, patches, kubeconfig files and the certificates, keys and token
//     files they name) or kubeadm did (certificates and keys under the PKI
//     folder, static Pod manifests, the kubelet's files), and the
//     system's files kubeadm looks at.
//   - MaxUnverified (2 MiB): a document read before the server that sends
//     it is verified, or that decides what is trusted: kube-public/
//     cluster-info during discovery and a discovery file. Both are a
//     kubeconfig of a few KiB.
//   - MaxAPIResponse (64 MiB): one response of the API server to a client
//     that has verified it. One object is at most about 1.5 MiB in etcd (a
//     few MiB as JSON); the largest answers kubeadm asks for are lists, and
//     the one list that grows with the cluster (its nodes) is read in pages.
//
// A read over a limit fails with a *TooLargeError naming what was read and
// the limit; errors.Is(err, ErrTooLarge) tells such failures apart. Files
// are checked against the limit before they are read when their size is
// known; a body is read no further than one byte past the limit.
//
// Transport caps the bodies of HTTP responses for clients made from a
// rest.Config (rest.Config.Wrap), where the reading itself happens inside
// client-go. gRPC clients (the container runtime, etcd) cap their messages
// with grpc.MaxCallRecvMsgSize instead.
package boundedread
