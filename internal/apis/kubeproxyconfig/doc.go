// Package kubeproxyconfig holds kube-proxy's configuration file format,
// KubeProxyConfiguration of kubeproxy.config.k8s.io/v1alpha1, as kubeadm
// reads it from the user's configuration and writes it into the
// kube-proxy ConfigMap: the JSON field names, omissions and value forms of
// Kubernetes v1.36. kubeadm sets a few fields and carries the others
// through unchanged.
//
// The types are kubeadm's own instead of k8s.io/kube-proxy's, whose logging
// block brings k8s.io/component-base's feature gates and metrics registry
// into every kubeadm process. The tests check every field against
// k8s.io/kube-proxy's types.
package kubeproxyconfig
