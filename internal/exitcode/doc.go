// Package exitcode holds the error kinds that decide kubeadm's process exit
// status: 1 for any failure, 2 for a failed preflight check and 3 for input
// that did not validate. Errors keep their code through %w wrapping.
package exitcode
