// Package config reads, defaults and validates kubeadm configuration files
// (kubeadm.k8s.io/v1beta4) exactly as this kubeadm
// does, for other Go programs: a cluster-api provider, an installer, a
// linter of configuration repositories.
//
// LoadFile and Load decode every document of a file (InitConfiguration,
// ClusterConfiguration, JoinConfiguration, ResetConfiguration,
// UpgradeConfiguration, and the kubelet's and kube-proxy's configurations),
// refuse unknown and repeated fields, apply kubeadm's static and dynamic
// defaults and validate the result. They return the documents in their
// v1beta4 form, defaults filled in, or an error naming the file and each
// field path that is wrong. ValidateFile is what `kubeadm config validate`
// runs.
//
// The dynamic defaults (the node's name, its advertise address, the CRI
// socket, the Kubernetes version a label such as "stable-1" stands for) come
// from Machine. Its zero value asks nothing of the machine or the network:
// see Machine for what it uses instead.
package config
