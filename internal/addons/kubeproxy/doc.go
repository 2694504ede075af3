// Package kubeproxy builds the kube-proxy addon kubeadm installs into a new
// cluster (ServiceAccount, ClusterRoleBinding kubeadm:node-proxier, Role and
// RoleBinding for reading the ConfigMap, ConfigMap and DaemonSet kube-proxy)
// and applies it through the API server. The objects are those upstream
// kubeadm v1.36.3 creates, checked against it as a black box.
package kubeproxy
