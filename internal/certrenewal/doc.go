// Package certrenewal holds kubeadm's automatic certificate renewal on a
// control-plane node: the files that make the init system run it every
// day (Schedule), the run itself (Renewer), and the status file the run
// leaves for "kubeadm certs check-expiration".
//
// A run renews only the certificates, and the client certificates
// embedded in the kubeconfig files, that expire within a window; the
// others are not touched, so a second run renews nothing. The previous
// files are copied to a dated backup folder first. Then the control-plane
// components that use a renewed file are made to use it, one at a time,
// each waited for until healthy: kube-controller-manager and
// kube-scheduler are restarted (they read their kubeconfig once), while
// kube-apiserver and etcd read their certificate files again by
// themselves and are only waited for (until they serve the new
// certificate); see docs/decisions/008-restarting-components-after-renewal.md.
// A component that does not come back gets its previous files back, is
// brought back on them, and the run fails.
//
// A run is resumable: before it renews anything it records in the status
// file which components will need restarting; a run killed before it
// restarted them finds them there and restarts them, even when nothing
// is left to renew.
//
// On a node without the key of a CA (external CA mode) a run that finds a
// certificate of that CA due renews nothing and fails, naming what
// expires and when.
package certrenewal
