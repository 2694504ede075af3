package config

import (
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
)

// ParseSubnets parses a comma-separated list of CIDRs, as
// networking.serviceSubnet and podSubnet hold them, by the rules
// validation checks them with (net.ParseCIDR's). Each prefix keeps the
// address as written ("10.96.0.5/12" stays so; Masked gives the network);
// an IPv4-mapped IPv6 prefix becomes the IPv4 prefix it stands for, as
// net.IP treats it. Any malformed entry fails the list.
func ParseSubnets(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		ip, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, err
		}
		ones, bits := n.Mask.Size()
		addr := addrOf(ip)
		switch {
		case bits == 128 && addr.Is4() && ones >= 96:
			ones -= 96
		case bits == 128 && addr.Is4():
			addr = netip.AddrFrom16(addr.As16())
		}
		out = append(out, netip.PrefixFrom(addr, ones))
	}
	return out, nil
}

// ParseAddresses sets c.Subnets from c.Networking and c.Endpoint from
// c.ControlPlaneEndpoint. A subnet list that does not parse is left empty;
// validation reports it with its field path, as it does an endpoint whose
// parts are not valid.
func ParseAddresses(c *kubeadm.ClusterConfiguration) {
	c.Endpoint = kubeadm.ParseEndpoint(c.ControlPlaneEndpoint)
	c.Subnets = kubeadm.Subnets{}
	if s, err := ParseSubnets(c.Networking.ServiceSubnet); err == nil {
		c.Subnets.Service = s
	}
	if c.Networking.PodSubnet != "" {
		if s, err := ParseSubnets(c.Networking.PodSubnet); err == nil {
			c.Subnets.Pod = s
		}
	}
}

// defaultEndpointPort gives a controlPlaneEndpoint without a port (or with
// an empty one, "lb:") the API server's bind port, as upstream's defaulting
// does: "lb" becomes "lb:6443", "fd00::1" "[fd00::1]:6443", the host as
// written. An endpoint that does not validate is left as it is, for
// validation to report as the user wrote it; a bad bind port goes in, and
// validation then reports both, as upstream's does.
func defaultEndpointPort(c *kubeadm.ClusterConfiguration, bindPort int32) {
	if c.ControlPlaneEndpoint == "" || c.Endpoint.Port != "" || validation.CheckControlPlaneEndpoint(c) != nil {
		return
	}
	c.Endpoint.Port = strconv.Itoa(int(bindPort))
	c.ControlPlaneEndpoint = net.JoinHostPort(c.Endpoint.Host, c.Endpoint.Port)
}

// addrOf turns a net.IP into a netip.Addr, IPv4 in its 4-byte form (not
// valid for nil).
func addrOf(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// DNSServiceIP returns the cluster DNS Service address: the tenth address
// of the first service subnet.
func DNSServiceIP(service []netip.Prefix) (netip.Addr, error) {
	return nthServiceIP(service, 10)
}

// APIServerServiceIP returns the "kubernetes" Service address: the first
// address of the first service subnet.
func APIServerServiceIP(service []netip.Prefix) (netip.Addr, error) {
	return nthServiceIP(service, 1)
}

func nthServiceIP(service []netip.Prefix, n int64) (netip.Addr, error) {
	if len(service) == 0 {
		return netip.Addr{}, fmt.Errorf("the configuration has no valid service subnet")
	}
	return NthAddress(service[0], n)
}

// NthAddress returns the n-th address of p, counting its network address
// as the 0th.
func NthAddress(p netip.Prefix, n int64) (netip.Addr, error) {
	p = p.Masked()
	size := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
	if big.NewInt(n).Cmp(size) >= 0 {
		return netip.Addr{}, fmt.Errorf("the subnet %s has fewer than %d addresses", p, n+1)
	}
	base := p.Addr().AsSlice()
	sum := new(big.Int).Add(new(big.Int).SetBytes(base), big.NewInt(n)).Bytes()
	b := make([]byte, len(base))
	copy(b[len(b)-len(sum):], sum)
	a, _ := netip.AddrFromSlice(b)
	return a, nil
}
