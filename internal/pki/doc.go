// Package pki creates, signs, checks, reads and writes the keys and X.509
// certificates of a kubeadm cluster. It builds on crypto/x509 alone.
//
// Its layers:
//
//   - primitives (pki.go): key generation, self-signed CAs, signed
//     certificates, PEM encoding, loading and writing pairs;
//   - the certificate table (table.go): every CA and certificate of a
//     control-plane node with its files, CA, subject, usages and the rule
//     for its subject alternative names, as kubeadm v1.36.3 makes them; and
//     the kubeconfig client certificates (kubeconfig.go);
//   - convergence (ensure.go, parallel.go): EnsureCert, EnsureAll and
//     EnsureServiceAccountKey re-detect what is on disk, keep what is valid,
//     create what is missing and report what is unusable by file name;
//     KeyPool makes keys ahead of need on several goroutines;
//   - maintenance: renewal (renew.go), signing requests for an external CA
//     (csr.go) and expiry reports (expiration.go).
//
// Certificates are backdated by five minutes so that a node whose clock is a
// little behind still accepts them. Private keys are written 0600, public
// material 0644 (sa.pub, like kubeadm, 0600), folders 0755, always through
// atomicfile (or an injected FileWriter). Side effects — the clock, key
// generation, file writing — are injected through Options.
package pki
