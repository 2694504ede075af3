// Package pki creates, signs, reads and writes the keys and X.509
// certificates of a kubeadm cluster. It builds on crypto/x509 alone.
//
// Certificates are backdated by five minutes so that a node whose clock is a
// little behind still accepts them. Private keys are written 0600, public
// material 0644, always through atomicfile.
package pki
