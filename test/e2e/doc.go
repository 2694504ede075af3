// Package e2e holds the end-to-end tests: each makes real nodes on this
// machine with the test bed (test/testbed: containerd, the kubelet, images
// built from the upstream binaries) and runs our kubeadm on them as an
// administrator would. They are skipped under go test -short; CI runs them
// with KUBEADM_E2E=1 after "go run ./hack/testbed prepare".
package e2e
