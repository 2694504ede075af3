// Package discovery is the first step of "kubeadm join": it finds the
// cluster a node joins and decides whether to trust it, and returns the
// kubeconfig the node's TLS bootstrap then uses (the API server URL, the
// cluster CA and a credential).
//
// There are two ways, as in kubeadm v1.36:
//
//   - Token discovery (Discoverer.Token). The node knows an API server
//     endpoint, a bootstrap token and, normally, pins of the cluster CA's
//     public key. It reads the public kube-public/cluster-info ConfigMap
//     without checking the server's certificate, polling until the
//     controller manager's bootstrap signer has added the signature for the
//     token ("jws-kubeconfig-<token-id>"). The signature, an HS256 detached
//     JWS keyed with the token secret, proves that whoever wrote cluster-info
//     knows the token. The CA in it must then match one of the pins, and
//     cluster-info is read a second time over TLS verified by that CA; both
//     copies must be the same. Without pins (only when CA verification is
//     skipped explicitly) the signature is the only check and the second
//     read is not made, as upstream does.
//   - File discovery (Discoverer.File). The node is given a kubeconfig, as a
//     local file or an https URL (fetched with the system's CA bundle). Its
//     cluster is trusted as it is; cluster-info is then read from that
//     cluster, over TLS verified by the file's CA and with the file's
//     credential if it has one, and when it can be read its server and CA
//     replace the file's (the file's user and contexts are kept). When
//     cluster-info is missing, forbidden or malformed, the file is used
//     unchanged.
//
// Discoverer.TLSBootstrapConfig picks the way from a JoinConfiguration and
// sets the credential: the TLS bootstrap token when one is given, otherwise
// (file discovery only) the credential the file carries.
//
// Before the CA is verified, nothing but anonymous GET requests for
// cluster-info is sent to the server. Polling is bounded by a timeout
// (timeouts.discovery, 5 minutes by default) and by the caller's context;
// failures that retrying cannot fix (a bad signature, a CA that matches no
// pin, a server certificate that does not verify, cluster-info changing
// between the two reads) end discovery at once. Errors wrap one of the
// package's sentinel errors (ErrPinMismatch, ErrBadSignature, ...) so that
// callers can tell them apart, and never contain a token secret: tokens are
// named by their public ID only.
//
// Choices where upstream leaves room or where this package is stricter:
//
//   - One deadline covers the whole discovery (both reads of token
//     discovery, or the download and the refresh of file discovery).
//   - On the verified read, a server certificate that does not verify
//     against the pinned CA ends discovery at once instead of being
//     retried until the timeout.
//   - The CA of cluster-info must be embedded, and a discovery file's
//     cluster must have a CA (embedded or by path); insecure-skip-tls-verify
//     in the file is turned off, so the result always verifies the server.
//   - An https discovery file is fetched once, without retries.
//   - Sizes are capped: each read of cluster-info and an https discovery
//     file at boundedread.MaxUnverified (2 MiB), a local discovery file and
//     the CA file it names at boundedread.MaxFile. An answer over the cap
//     ends discovery at once, after reading no more than the cap.
//   - Redirects are followed only to the host and port asked for, and
//     never from https to http (redirectpolicy.SameHost): a discovery file
//     is trusted for where it was read from.
//   - A discovery file URL answering anything but 200 is an error naming
//     the status.
//
// Every side effect is injected through Discoverer's fields: how
// connections are dialled, the CAs trusted for https discovery files, the
// clock and the poll interval, and where progress is logged.
package discovery
