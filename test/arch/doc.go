// Package arch checks the architecture rules of docs/architecture.md that
// a program can check: what the kubeadm binary links, which of our
// packages may end the process, which may write files other than
// through internal/atomicfile, that whole files and bodies are read
// through internal/boundedread, and that every http.Client says which
// redirects it follows. It has only tests; they read the source
// and `go list` of ./cmd/kubeadm, so they run with the unit tests.
package arch
