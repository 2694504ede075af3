package kubeadm

import "net/netip"

// Subnets are a ClusterConfiguration's service and pod subnets as values.
// Package config parses Networking's strings into them once, when it
// defaults the configuration; every reader takes them from here instead of
// parsing the strings again. A list that does not parse is left empty:
// validation reports it, naming the field.
type Subnets struct {
	// Service are networking.serviceSubnet's CIDRs in the order given: one,
	// or one of each family on a dual-stack cluster.
	Service []netip.Prefix
	// Pod are networking.podSubnet's CIDRs; none when it is empty.
	Pod []netip.Prefix
}
