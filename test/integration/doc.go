// Package integration holds the fast-tier integration tests: each starts
// the real etcd, kube-apiserver and kube-controller-manager from the files
// our kubeadm writes (see test/controlplane) and checks that those files
// work. They are skipped under go test -short and when the upstream
// binaries are missing; run them with `make integration`.
package integration
