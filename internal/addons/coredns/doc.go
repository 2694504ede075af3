// Package coredns builds the CoreDNS addon kubeadm installs into a new
// cluster (ServiceAccount, ClusterRole and ClusterRoleBinding
// system:coredns, ConfigMap and Deployment coredns, Service kube-dns) and
// applies it through the API server. The objects are those upstream
// kubeadm v1.36.3 creates, checked against it as a black box.
package coredns
