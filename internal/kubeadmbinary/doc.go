// Package kubeadmbinary holds the copy of the running kubeadm program that
// static Pods run from the node's disk (Path): the node-local API server
// load balancer and the CISHardening profile's kubelet serving
// certificate approver. Install copies it there (atomically, only when it
// differs) and SHA256 names its content, which the Pods carry in an
// annotation so that the kubelet restarts them when it changes.
package kubeadmbinary
