// Package selfhosting holds the self-hosted control plane of the
// SelfHosting feature gate (docs/decisions/014): kube-apiserver,
// kube-controller-manager and kube-scheduler run as DaemonSet Pods in
// kube-system instead of static Pods, and etcd stays a static Pod.
//
// DaemonSet turns a component's static Pod into its DaemonSet. Pivot and
// Unpivot move a running control-plane node from one form to the other,
// one component at a time with the API server last; both inspect the node
// and the cluster first, so either can run again after a crash and
// converges. Checkpointer is the loop of the self-hosted-checkpointer
// static Pod, the recovery path a restarted node needs: it puts a saved
// copy of a component's static Pod (its checkpoint) into the kubelet's
// manifest folder while the component does not run, and takes it away
// once the component's DaemonSet Pod is back on the node.
package selfhosting
