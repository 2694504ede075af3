// Package kubeadm holds the internal representation of kubeadm's
// configuration: the one form every phase and command works with, whatever
// version of the file format the user wrote. Files are decoded into a
// versioned package (pkg/apis/kubeadm/v1beta4), defaulted there,
// and converted to these types by package config.
//
// The top-level kinds differ from the file format: an InitConfiguration
// carries its ClusterConfiguration, and a ClusterConfiguration carries the
// component configurations (kubelet, kube-proxy) that came with it. Leaf
// types that are the same in every supported version are shared with
// v1beta4 as type aliases; when a future format changes one of them, the
// alias becomes a type of its own here and the conversions grow.
package kubeadm
