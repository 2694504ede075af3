package kubeadm

import (
	"net"
	"net/netip"
)

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

// Endpoint is a ClusterConfiguration's controlPlaneEndpoint ("host",
// "host:port", "[v6]:port" or a bare IPv6 address) split into its parts.
// Package config parses the string into it once (ParseEndpoint), when it
// defaults the configuration; validation checks the parts, and every reader (the API
// server's certificate, the kubeconfig files) takes them from here instead
// of splitting the string again. Zero while controlPlaneEndpoint is empty.
type Endpoint struct {
	// Host is the host as written, without the brackets of "[v6]:port". A
	// value that does not split as host:port (an unbracketed IPv6 address,
	// say) is all host.
	Host string
	// Port is the port as written, "" when there is none. Validation
	// requires digits for a number from 1 to 65535; leading zeros are kept,
	// as upstream keeps them in the kubeconfig files.
	Port string
	// Addr is Host as an IP address when it is one (IPv4 and IPv4-mapped
	// addresses in their 4-byte form); not valid for a DNS name.
	Addr netip.Addr
}

// IsIP reports whether the endpoint's host is an IP address.
func (e Endpoint) IsIP() bool { return e.Addr.IsValid() }

// ParseEndpoint splits a controlPlaneEndpoint into host and port, as
// net.SplitHostPort does; a value that does not split is all host (an
// unbracketed IPv6 address, or something validation refuses). The host is
// an IP address when net.ParseIP takes it, as validation judges it. It never
// fails: whether the parts are valid is validation's question.
func ParseEndpoint(s string) Endpoint {
	if s == "" {
		return Endpoint{}
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = s, ""
	}
	e := Endpoint{Host: host, Port: port}
	if ip := net.ParseIP(host); ip != nil {
		a, _ := netip.AddrFromSlice(ip)
		e.Addr = a.Unmap()
	}
	return e
}
