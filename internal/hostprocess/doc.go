// Package hostprocess holds the control plane of host processes of the
// HostProcessControlPlane feature gate (docs/decisions/013): etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler run as
// systemd units instead of static Pods. A unit is rendered from the
// component's static Pod (its container's command and environment), so
// the flags have one source; a unit read back is a Pod again, for the code
// that reads flags from manifests. Units installs, starts and removes the
// units through systemctl; Version checks the binaries a user installed.
package hostprocess
