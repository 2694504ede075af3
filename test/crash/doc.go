// Package crash kills our kubeadm (SIGKILL) at many points of the phases
// that write the node's files, runs them again, and checks that the second
// run converges: it succeeds and leaves a complete, consistent set of
// files and nothing else, as a run that was never interrupted. It builds
// the binary, so it is skipped under go test -short; CI runs it on its own.
package crash
