// Package kubelet holds what kubeadm writes for the kubelet on a node and
// how it stops and starts the kubelet service.
//
// The files, in the kubelet's folder (/var/lib/kubelet normally), are the
// ones upstream kubeadm v1.37 writes:
//
//   - config.yaml: the cluster's KubeletConfiguration, with the user's
//     "kubeletconfiguration" patches applied and the node-local settings
//     merged in last;
//   - instance-config.yaml: the node-local settings (the container runtime
//     endpoint);
//   - kubeadm-flags.env: KUBELET_KUBEADM_ARGS, the command-line flags the
//     kubelet's service unit passes to the kubelet.
//
// Every file is written atomically with mode 0644, the folder created with
// mode 0700 when missing. Writing is idempotent: the same inputs give the
// same bytes, so a second run changes nothing but the files' inodes.
//
// Service stops and restarts the kubelet through the host's init system
// (systemd or OpenRC). It never fails: when the service cannot be
// controlled it says so and the caller carries on, as upstream does.
//
// The builders take a KubeletConfiguration and node registration options
// rather than a whole init configuration, so "kubeadm join" (which fetches
// the kubelet configuration from the cluster) can use them as well.
package kubelet
