// Package tokenformat knows the shape of a bootstrap token ("abcdef.0123456789abcdef"),
// of the groups a token may add its user to, and of its usages: it checks
// them and makes new random tokens.
//
// It is a leaf on purpose. Every kubeadm process links it, and it must cost
// nothing at start-up: the checks are plain loops instead of regular
// expressions compiled in a package init.
package tokenformat
