// Package rotatecaphases holds the workflow of "kubeadm certs rotate-ca"
// as phases of the generic runner. The work itself is in
// internal/carotation.
package rotatecaphases
