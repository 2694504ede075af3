package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Cluster is a set of nodes sharing one network. Its state lives in
// StateDir, so another process (a later "hack/testbed down") can find and
// remove what an earlier one made.
type Cluster struct {
	// Name prefixes the cluster's network namespaces and cgroups; short
	// (they also name interfaces).
	Name string
	// StateDir holds the nodes' folders and logs.
	StateDir string
	// Testbed is the built hack/testbed program: each node's boot program
	// and its stand-in systemctl.
	Testbed string
	// Programs are linked into every node's /usr/local/sbin by name
	// ("kubelet", "kubectl", "kubeadm", ...).
	Programs map[string]string
	// Archives are the image archives imported into every node.
	Archives []string
	// PauseImage is the sandbox image containerd is told to use.
	PauseImage string
	// ServeImages runs a registry (Registry) of Archives in the hub, at
	// the bridge's address, which the nodes' containerd asks first for
	// images of registry.k8s.io: a Pod whose pull policy is Always
	// starts with the image it names. Set before the nodes are started.
	ServeImages bool
	// Out receives progress lines (nil: none).
	Out io.Writer
}

// hub is the name of the cluster's network namespace that holds the bridge.
func (c *Cluster) hub() string { return c.Name + "-hub" }

func (c *Cluster) logf(format string, args ...any) {
	if c.Out != nil {
		fmt.Fprintf(c.Out, format+"\n", args...)
	}
}

// nodesDir holds one folder per node.
func (c *Cluster) nodesDir() string { return filepath.Join(c.StateDir, "nodes") }

// Nodes returns the cluster's nodes known from its state, by index.
func (c *Cluster) Nodes() ([]*Node, error) {
	entries, err := os.ReadDir(c.nodesDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var nodes []*Node
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.nodesDir(), e.Name(), "index"))
		if err != nil {
			continue // a folder left half-made: Down removes it
		}
		idx, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			continue
		}
		nodes = append(nodes, c.node(e.Name(), idx))
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Index < nodes[j].Index })
	return nodes, nil
}

// Node returns the named node, giving it the next free index if the
// cluster does not know it yet. Nothing is started: see Node.Up.
func (c *Cluster) Node(name string) (*Node, error) {
	nodes, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for _, n := range nodes {
		if n.Name == name {
			return n, nil
		}
		used[n.Index] = true
	}
	idx := 1
	for used[idx] {
		idx++
	}
	n := c.node(name, idx)
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "index"), []byte(strconv.Itoa(idx)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *Cluster) node(name string, idx int) *Node {
	return &Node{Cluster: c, Name: name, Index: idx, Dir: filepath.Join(c.nodesDir(), name)}
}

// hostsFile is /etc/hosts of every node: each node's name and address.
func (c *Cluster) hostsFile(nodes []*Node) string {
	var b strings.Builder
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s\t%s\n", n.Addr(), n.Name)
	}
	return b.String()
}

// peers are, for each node, the other nodes' addresses and pod networks.
func peers(nodes []*Node, self *Node) map[netip.Addr]netip.Prefix {
	return peerRoutes(nodes, self, (*Node).Addr, (*Node).PodPrefix)
}

// peerRoutes maps each node but self to its pod network, keyed by its
// address, as addr and pods give them for one address family.
func peerRoutes(nodes []*Node, self *Node, addr func(*Node) netip.Addr, pods func(*Node) netip.Prefix) map[netip.Addr]netip.Prefix {
	out := map[netip.Addr]netip.Prefix{}
	for _, n := range nodes {
		if n.Name != self.Name {
			out[addr(n)] = pods(n)
		}
	}
	return out
}

// EnableIPv6 adds the IPv6 cluster network to running nodes: each gets
// its Addr6, a default route through the hub and routes to the others'
// PodPrefix6. The IPv4 network stays as it is.
func (c *Cluster) EnableIPv6(ctx context.Context, nodes []*Node) error {
	for _, n := range nodes {
		peers6 := peerRoutes(nodes, n, (*Node).Addr6, (*Node).PodPrefix6)
		if err := addIPv6(ctx, runIP, n.network(nodes), n.Addr6(), peers6); err != nil {
			return err
		}
	}
	return nil
}

// Up brings up the named nodes (and the cluster network), leaving nodes
// that already run as they are, then refreshes every node's /etc/hosts
// and routes so all nodes know each other.
func (c *Cluster) Up(ctx context.Context, names ...string) ([]*Node, error) {
	if err := ensureHub(ctx, runIP, c.hub()); err != nil {
		return nil, err
	}
	if c.ServeImages {
		if err := c.ensureRegistry(ctx); err != nil {
			return nil, err
		}
	}
	var up []*Node
	for _, name := range names {
		n, err := c.Node(name)
		if err != nil {
			return nil, err
		}
		up = append(up, n)
	}
	starting := 0
	for _, n := range up {
		if !n.Running() {
			starting++
		}
	}
	if err := c.checkDisk(starting); err != nil {
		return nil, err
	}
	all, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	hosts := c.hostsFile(all)
	for _, n := range all {
		if err := n.writeHosts(hosts); err != nil {
			return nil, err
		}
		if err := ensureNodeNetwork(ctx, runIP, n.network(all)); err != nil {
			return nil, err
		}
	}
	for _, n := range up {
		if err := n.up(ctx); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	return up, nil
}

// Down stops and removes every node of the cluster, then its network and
// its state folder. It carries on past failures and reports them all;
// calling it again finishes what a failed call left.
func (c *Cluster) Down(ctx context.Context) error {
	nodes, err := c.Nodes()
	if err != nil {
		return err
	}
	var errs []error
	for i := len(nodes) - 1; i >= 0; i-- {
		if err := nodes[i].Down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", nodes[i].Name, err))
		}
	}
	for _, name := range []string{"registry", apiLBName} {
		if err := c.stopHubProcess(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := deleteNetns(ctx, runIP, c.hub()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(c.nodesDir()); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(c.StateDir) // only when nothing else is kept there
	}
	return errors.Join(errs...)
}
