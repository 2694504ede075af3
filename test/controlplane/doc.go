// Package controlplane is the "fast tier" integration harness: it runs this
// repository's kubeadm (init phases certs, kubeconfig, etcd local and
// control-plane) into a temporary root folder, then starts the real etcd,
// kube-apiserver and kube-controller-manager (and, on request,
// kube-scheduler) as host processes with exactly the command lines of the
// static Pod manifests kubeadm wrote. No kubelet and no container runtime are
// involved, so a control plane built from our files answers in seconds.
//
// How the manifests are turned into host processes:
//
//   - kubeadm runs with --rootfs <tmp>/root, so it writes the files a real node
//     would have (/etc/kubernetes/..., /var/lib/etcd) under that folder, with
//     the default configuration paths. Manifests always name
//     /etc/kubernetes/... (there is no flag to move them), which is why the
//     rootfs route is used rather than per-folder flags.
//   - Each container's command and args are taken as written. Every argument
//     naming an absolute path is mapped through the Pod's hostPath volumes
//     the way the container runtime would mount them, then rooted at the
//     temporary folder. An absolute path that no volume mounts is an error:
//     in a real container that file would not exist either.
//   - The bare command name (etcd, kube-apiserver, ...) is the binary built by
//     hack/build-upstream.sh under .cache/upstream.
//   - Everything runs in a network namespace made for the control plane
//     (lo up, plus the advertise address on lo), so the fixed ports 2379,
//     6443, 10257... never clash with the host or with another test run, and
//     nothing is added to the host's own interfaces. In-process clients reach
//     it through a dialer that opens its sockets inside that namespace;
//     programs are run inside it with nsenter (see ControlPlane.Command).
//   - Readiness follows the manifests' probes (etcd's /readyz on the metrics
//     port, the controller manager's /healthz); for the API server /readyz is
//     asked with the super-admin credentials and ca.crt.
//
// StopComponent and StartComponent play the kubelet's part for a test that
// takes a manifest away and puts it back; Options.EtcdOnly runs etcd alone.
//
// Start skips the test when something it needs is missing (the upstream
// binaries, root, nsenter, ip) or under go test -short; with
// KUBEADM_INTEGRATION=1 a missing prerequisite fails the test instead.
package controlplane
