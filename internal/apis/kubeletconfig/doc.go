// Package kubeletconfig holds the kubelet's configuration file format,
// KubeletConfiguration of kubelet.config.k8s.io/v1beta1, as kubeadm reads
// it from the user's configuration and writes it to
// /var/lib/kubelet/config.yaml and the kubelet-config ConfigMap: the JSON
// field names, omissions and value forms of Kubernetes v1.36.
//
// kubeadm sets a handful of fields and carries the others through
// unchanged; it does not apply the kubelet's own defaults, as upstream
// kubeadm does not. The types are kubeadm's own instead of k8s.io/kubelet's,
// whose logging and tracing blocks bring k8s.io/component-base's feature
// gates and metrics registry into every kubeadm process. The tests check
// every field against k8s.io/kubelet's types and compare files written by
// both.
package kubeletconfig
