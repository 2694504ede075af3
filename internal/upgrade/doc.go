// Package upgrade holds what "kubeadm upgrade" decides and does on a node:
// the cluster health checks run before anything changes, the version skew
// policy, the plan (which component runs which version and what it would
// become), the replacement of static Pod manifests or units with a backup
// and a rollback when a component does not come back healthy (which
// returns once the controller manager and the scheduler lead again,
// internal/leaderlease), the refresh of the kubelet's configuration file, and the
// migration of what older kubeadm left on a node (the kubelet's CRI
// socket flag, the Node's CRI socket annotation).
//
// RunPlan is "kubeadm upgrade plan" once its flags are read. The upgrade
// commands' phases (internal/phases/upgradephases) call into this package;
// it knows nothing of flags or of the phase runner. The copies of etcd's
// data folder an upgrade makes and puts back are internal/etcd's.
package upgrade
