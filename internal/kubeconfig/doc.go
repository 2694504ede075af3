// Package kubeconfig builds, writes and checks kubeconfig files: the five
// files of a control-plane node (admin.conf, super-admin.conf,
// kubelet.conf, controller-manager.conf and scheduler.conf), each holding
// the cluster CA, an API server URL and a client certificate signed by the
// cluster CA, and the kubeconfig of an additional user.
//
// Files.Ensure is idempotent: an existing file is kept when it trusts the
// cluster CA (it is then never rewritten), and a missing one is created.
// Running it twice, or after a crash, leaves the same files. Files are
// written atomically with mode 0600.
package kubeconfig
