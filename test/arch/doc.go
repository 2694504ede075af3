// Package arch checks the architecture rules of docs/architecture.md that
// a program can check: what the kubeadm binary links, which of our
// packages may end the process, and which may write files other than
// through internal/atomicfile. It has only tests; they read the source
// and `go list` of ./cmd/kubeadm, so they run with the unit tests.
package arch
