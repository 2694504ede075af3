// Package upgradephases holds the workflows of "kubeadm upgrade apply"
// (the first control-plane node, to a new version) and "kubeadm upgrade
// node" (every other node, to the version the cluster now has) as phases
// of the generic runner, with the Data they share (Load completes it from
// the node's files and the cluster), and "kubeadm upgrade diff" (Diff),
// which builds the same manifests. The work itself is in internal/upgrade; the
// phases that upgrade has in common with init (upload-config,
// bootstrap-token, addon) run init's phases on a view of the node.
package upgradephases
