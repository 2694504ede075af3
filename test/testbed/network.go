package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
)

// The cluster network: every node has one address on it, the hub's bridge
// is its gateway. Pod networks are 10.244.<node index>.0/24, routed to the
// node that owns them.
var (
	clusterPrefix = netip.MustParsePrefix("10.199.0.0/24")
	gatewayAddr   = netip.MustParseAddr("10.199.0.1")
)

// The IPv6 cluster network, for tests that ask for it (Cluster.EnableIPv6):
// node addresses fd99::<10+index>, pod networks fd00:10:244:<index>::/64.
var (
	clusterPrefix6 = netip.MustParsePrefix("fd99::/64")
	gatewayAddr6   = netip.MustParseAddr("fd99::1")
)

// nodeAddr6 is the IPv6 address of the node with the given index.
func nodeAddr6(index int) netip.Addr {
	b := gatewayAddr6.As16()
	b[15] = byte(0x10 + index)
	return netip.AddrFrom16(b)
}

// podPrefix6 is the IPv6 pod network of the node with the given index.
func podPrefix6(index int) netip.Prefix {
	b := [16]byte{0xfd, 0x00, 0x00, 0x10, 0x02, 0x44, 0x00, byte(index)}
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}

// addIPv6 gives the hub and the node of network n their IPv6 addresses
// (without duplicate address detection, so they work at once), the node a
// default route through the hub, and routes to its peers' IPv6 pod
// networks (peers6). Safe to run again.
func addIPv6(ctx context.Context, ip ipRunner, n nodeNetwork, addr6 netip.Addr, peers6 map[netip.Addr]netip.Prefix) error {
	steps := [][]string{
		{"-n", n.Hub, "addr", "replace", netip.PrefixFrom(gatewayAddr6, clusterPrefix6.Bits()).String(), "dev", "br0", "nodad"},
		{"-n", n.Netns, "addr", "replace", netip.PrefixFrom(addr6, clusterPrefix6.Bits()).String(), "dev", "eth0", "nodad"},
		{"-n", n.Netns, "-6", "route", "replace", "default", "via", gatewayAddr6.String()},
	}
	for addr, pods := range peers6 {
		steps = append(steps, []string{"-n", n.Netns, "-6", "route", "replace", pods.String(), "via", addr.String()})
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("the IPv6 network of %s: %w", n.Netns, err)
		}
	}
	return nil
}

// nodeAddr is the address of the node with the given index (1, 2, ...).
func nodeAddr(index int) netip.Addr {
	b := gatewayAddr.As4()
	b[3] = byte(10 + index)
	return netip.AddrFrom4(b)
}

// podPrefix is the pod network of the node with the given index.
func podPrefix(index int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(index), 0}), 24)
}

// ipRunner runs ip(8) commands.
type ipRunner func(ctx context.Context, args ...string) error

// runIP runs ip with args, folding its output into the error.
func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// netnsExists reports whether the named network namespace exists.
func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// ensureHub creates the hub namespace and its bridge unless they exist.
func ensureHub(ctx context.Context, ip ipRunner, hub string) error {
	if netnsExists(hub) {
		return nil
	}
	steps := [][]string{
		{"netns", "add", hub},
		{"-n", hub, "link", "set", "lo", "up"},
		{"-n", hub, "link", "add", "br0", "type", "bridge"},
		{"-n", hub, "addr", "add", netip.PrefixFrom(gatewayAddr, clusterPrefix.Bits()).String(), "dev", "br0"},
		{"-n", hub, "link", "set", "br0", "up"},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("creating the cluster's network: %w", err)
		}
	}
	return nil
}

// nodeNetwork describes a node's network namespace.
type nodeNetwork struct {
	Netns, Hub, HubVeth string
	Addr                netip.Addr
	// Nameservers get an unreachable route: a lookup the node cannot
	// answer from /etc/hosts fails at once instead of timing out.
	Nameservers []netip.Addr
	// Peers are the other nodes' addresses and pod networks.
	Peers map[netip.Addr]netip.Prefix
}

// ensureNodeNetwork creates a node's namespace, its link to the hub and its
// routes. It is done in one go when the namespace is missing; an existing
// namespace only gets routes to peers it lacks.
func ensureNodeNetwork(ctx context.Context, ip ipRunner, n nodeNetwork) error {
	if !netnsExists(n.Netns) {
		steps := [][]string{
			{"netns", "add", n.Netns},
			{"-n", n.Netns, "link", "set", "lo", "up"},
			{"-n", n.Hub, "link", "add", n.HubVeth, "type", "veth", "peer", "name", "eth0", "netns", n.Netns},
			{"-n", n.Hub, "link", "set", n.HubVeth, "master", "br0", "up"},
			{"-n", n.Netns, "addr", "add", netip.PrefixFrom(n.Addr, clusterPrefix.Bits()).String(), "dev", "eth0"},
			{"-n", n.Netns, "link", "set", "eth0", "up"},
			{"-n", n.Netns, "route", "add", "default", "via", gatewayAddr.String()},
		}
		for _, ns := range n.Nameservers {
			steps = append(steps, []string{"-n", n.Netns, "route", "add", "unreachable", ns.String() + "/32"})
		}
		for _, s := range steps {
			if err := ip(ctx, s...); err != nil {
				return fmt.Errorf("creating the network of %s: %w", n.Netns, err)
			}
		}
	}
	for addr, pods := range n.Peers {
		if err := ip(ctx, "-n", n.Netns, "route", "replace", pods.String(), "via", addr.String()); err != nil {
			return fmt.Errorf("routing to %s's pods: %w", addr, err)
		}
	}
	return nil
}

// deleteNetns removes a network namespace; a missing one is fine.
func deleteNetns(ctx context.Context, ip ipRunner, name string) error {
	if !netnsExists(name) {
		return nil
	}
	return ip(ctx, "netns", "del", name)
}

// hostNameservers are the IPv4 nameservers of the host's /etc/resolv.conf.
func hostNameservers() []netip.Addr {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []netip.Addr
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if a, err := netip.ParseAddr(f[1]); err == nil && a.Is4() && !a.IsLoopback() {
				out = append(out, a)
			}
		}
	}
	return out
}
