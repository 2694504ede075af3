// Package resetphases holds the phases of "kubeadm reset" as data for the
// workflow runner: preflight (confirmation, privileges), remove-etcd-member
// and cleanup-node. Each phase looks at what is there and removes what is
// left, so reset converges whether it runs once, twice, or again after it
// was interrupted. Everything it does to the machine goes through Data's
// injected functions.
package resetphases
