// Package staticpod builds the static Pod manifests kubeadm runs the
// control plane with (etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler), applies the user's patches to them and writes them into
// the kubelet's manifest folder.
//
// The builders are pure: the same configuration, host facts (which CA
// certificate folders exist, the proxy variables of the environment) and
// options give the same Pod. WriteManifest is idempotent: it leaves a
// manifest whose content is already right untouched, so the kubelet does not
// restart the Pod.
package staticpod
