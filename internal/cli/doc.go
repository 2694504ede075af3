// Package cli builds kubeadm's command tree. Each command has one
// constructor taking its dependencies; none of them keeps package state, so
// tests can build and run a fresh tree with their own streams.
package cli
