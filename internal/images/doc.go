// Package images names the container images a kubeadm cluster runs: the
// control-plane components, kube-proxy, CoreDNS, pause and etcd, honouring
// the configured image repository, per-component overrides and disabled
// add-ons.
package images
