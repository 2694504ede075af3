// Package uploadconfig stores the cluster's configuration in the cluster,
// where joining nodes and later kubeadm commands read it: the
// ClusterConfiguration in the kube-system/kubeadm-config ConfigMap and the
// kubelets' shared KubeletConfiguration in kube-system/kubelet-config, each
// with a Role and RoleBinding that let nodes and kubeadm's bootstrap tokens
// read it. Object names, keys, annotations and rules are upstream kubeadm
// v1.36.3's.
package uploadconfig
