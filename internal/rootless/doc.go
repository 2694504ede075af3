// Package rootless holds what the RootlessControlPlane feature gate needs:
// the system users and groups etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler run as (kept in /etc/passwd and /etc/group, with IDs
// from the system range /etc/login.defs gives), the owners of the keys and
// kubeconfig files each of them reads, and the security context of their
// static Pods. It also manages a single account of a well-known name (the
// etcd user of the CISHardening feature gate), marked so that only what
// kubeadm made is removed.
package rootless
