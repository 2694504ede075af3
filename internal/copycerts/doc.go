// Package copycerts moves the control plane's shared certificate
// authorities and keys between control-plane nodes through the cluster: the
// first node encrypts them with a certificate key (AES-256-GCM) into the
// kube-system/kubeadm-certs Secret, and a joining control-plane node given
// the same key downloads and decrypts them. The download checks the whole
// Secret before it writes a file: every expected entry is there, each
// parses as what its name says, each key belongs to its certificate and
// ca.crt is the CA discovery made the node trust; otherwise it writes
// nothing and names each entry at fault.
//
// The Secret, its short-lived owner and its RBAC rules have the names and
// shape upstream kubeadm v1.36.3 gives them, so either implementation can
// read what the other uploaded. The certificate key itself never appears in
// an error or a log line.
package copycerts
