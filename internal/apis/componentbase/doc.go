// Package componentbase holds the configuration blocks that several
// Kubernetes components share in their configuration files (logging,
// tracing, the client connection to the API server), with the JSON field
// names, omissions and value forms of Kubernetes v1.36, so that kubeadm
// reads and writes the kubelet's and kube-proxy's files as upstream does.
//
// They are kubeadm's own types rather than k8s.io/component-base's: that
// module's logging types bring feature gates and a Prometheus metrics
// registry whose package initialisation every kubeadm process would pay
// for (≈ 7 ms of start-up). The tests check every field against the
// upstream types.
package componentbase
