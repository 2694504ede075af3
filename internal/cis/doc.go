// Package cis holds the hardening profile of the CISHardening feature gate:
// what the CIS Kubernetes Benchmark (sections 1 to 4, as kube-bench runs
// them on a kubeadm node) asks of the control-plane components' flags, of
// the kubelet's configuration and of the files on a node, with the values
// kubeadm picks where the benchmark leaves the choice. It only describes:
// the static Pod manifests (internal/staticpod), the kubelet configuration
// (internal/config) and the init, join, upgrade and reset phases apply it.
// docs/cis-hardening.md lists what it changes and the checks it leaves
// failing on purpose.
package cis
