// Package testbed makes real Kubernetes nodes on this machine, for the
// end-to-end tests and for trying the project's kubeadm by hand.
//
// A node is a set of namespaces, never a virtual machine or a container
// image:
//
//   - its own network namespace (/run/netns/<cluster>-<node>) with one veth
//     ("eth0") into a bridge that lives in the cluster's own "hub"
//     namespace, so nodes reach each other on 10.199.0.0/24 and nothing is
//     added to the host's interfaces, routes or iptables;
//   - its own mount namespace, in which node folders under the state
//     directory are bind-mounted over /etc/kubernetes, /var/lib/kubelet,
//     /var/lib/etcd, /var/lib/containerd, /run/containerd, /etc/cni/net.d,
//     /var/log/pods, /etc/hosts ... so each node has its own files at the
//     paths kubeadm and the kubelet use;
//   - its own UTS namespace (the host name is the node's name) and PID
//     namespace, whose first process is the node's "boot" program (Boot):
//     it mounts the node's folders, runs containerd and the kubelet as
//     services and answers a stand-in systemctl, the way systemd would on
//     a real machine. Killing it ends every process of the node;
//   - its own cgroup (/<cluster>-<node> in every hierarchy), given to the
//     kubelet as its cgroup root, so kubelets of several nodes never share
//     cgroups and a node's leftovers are found and removed by path.
//
// Images are built from locally built binaries (hack/build-upstream.sh)
// into OCI archives (WriteArchive) tagged with the names kubeadm expects,
// and imported into each node's containerd: no registry is needed.
//
// Lifecycle: Cluster.Up creates what is missing and leaves what runs (it
// may be called again); Cluster.Down undoes everything in reverse order,
// tolerates a half-made cluster, and may be called again.
package testbed
