// Package machine reads facts about the local machine that kubeadm's
// defaults depend on: the host name, the address of the default-route
// interface and which container runtime socket is present. Each function
// takes the paths it reads so tests can point them at fixtures.
package machine
