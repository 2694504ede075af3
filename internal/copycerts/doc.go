// Package copycerts moves the control plane's shared certificate
// authorities and keys between control-plane nodes through the cluster: the
// first node encrypts them with a certificate key (AES-256-GCM) into the
// kube-system/kubeadm-certs Secret, and a joining control-plane node given
// the same key downloads and decrypts them.
//
// The Secret, its short-lived owner and its RBAC rules have the names and
// shape upstream kubeadm v1.36.3 gives them, so either implementation can
// read what the other uploaded. The certificate key itself never appears in
// an error or a log line.
package copycerts
