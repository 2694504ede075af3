package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestIPv6 makes an IPv6-only cluster: init on node1 with the certificates
// uploaded, a second control-plane node that joins and then leaves with
// reset. Every URL kubeadm builds from an IPv6 address needs brackets
// (the API server's endpoint in the join command and the kubeconfig
// files, etcd's client and peer URLs); the real components prove them.
func TestIPv6(t *testing.T) {
	nodes := ipv6Nodes(t, "e2e6", (*testbed.Node).WriteCNIConfigIPv6)
	n1, n2 := nodes[0], nodes[1]
	endpoint := netip.AddrPortFrom(n1.Addr6(), 6443).String()
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, ipv6InitConfig(t, n1, endpoint))

	// A new network namespace forwards no IPv6, as it forwards no IPv4:
	// with an IPv6 cluster, preflight names the IPv6 file instead.
	// (Upstream's findings are the same; it exits 1, see the README.)
	findings := []string{"FileContent--proc-sys-net-ipv6-conf-default-forwarding", "SystemVerification"}
	r := run(t, n1, "kubeadm", "init", "phase", "preflight", "--config", cfg)
	if got := checkNames(`\[ERROR ([^\]]+)\]`, r.Stdout+r.Stderr); r.Code != 2 || !slices.Equal(got, findings) {
		t.Errorf("strict preflight: exit %d, findings %v, want exit 2 and %v\n%s%s", r.Code, got, findings, r.Stdout, r.Stderr)
	}
	ignore := "--ignore-preflight-errors=" + strings.Join(findings, ",")

	r = run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignore)
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	if jc.endpoint != endpoint || jc.certificateKey == "" {
		t.Errorf("join command: endpoint %q, want %q; certificate key %q", jc.endpoint, endpoint, jc.certificateKey)
	}
	for _, f := range []string{"admin.conf", "super-admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"} {
		if got := mustRun(t, n1, "grep", "server:", "/etc/kubernetes/"+f); strings.TrimSpace(got) != "server: https://"+endpoint {
			t.Errorf("%s: %s", f, strings.TrimSpace(got))
		}
	}
	nodeReady(t, n1, n1.Name, 90*time.Second)
	if got := kubectl(t, n1, "get", "node", "node1", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`); got != n1.Addr6().String() {
		t.Errorf("node1's InternalIP: %q", got)
	}
	if got := kubectl(t, n1, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"); got != "fd00:10:96::1" {
		t.Errorf("the kubernetes Service's cluster IP: %q", got)
	}
	if got := kubectl(t, n1, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}"); got != "fd00:10:96::a" {
		t.Errorf("kube-dns's cluster IP: %q", got)
	}

	t.Run("a second control-plane node joins", func(t *testing.T) {
		join := filepath.Join(n2.Dir, "join.yaml")
		writeFile(t, join, fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: %q
    token: %s
    caCertHashes: [%s]
nodeRegistration:
  name: %s
  kubeletExtraArgs:
  - name: node-ip
    value: %s
controlPlane:
  localAPIEndpoint:
    advertiseAddress: %s
  certificateKey: %s
`, jc.endpoint, jc.token, jc.hash, n2.Name, n2.Addr6(), n2.Addr6(), jc.certificateKey))
		r := run(t, n2, "kubeadm", "join", "--config", join, ignore)
		if r.Code != 0 {
			t.Fatalf("control-plane join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		client := "https://" + netip.AddrPortFrom(n1.Addr6(), 2379).String()
		checkVoters(t, etcdMembersAt(t, n1, client), 2)
		peer := "https://" + netip.AddrPortFrom(n2.Addr6(), 2380).String()
		if out := etcdctlMembers(t, n1, client); !strings.Contains(out, ", "+peer+", ") {
			t.Errorf("no etcd member with peer URL %s:\n%s", peer, out)
		}
		nodeReady(t, n2, n2.Name, 90*time.Second)
		own := "https://" + netip.AddrPortFrom(n2.Addr6(), 6443).String()
		// join waits for /livez, as upstream's does; the RBAC and priority
		// class hooks of a new API server may still be running then, and
		// /readyz waits for them too.
		eventually(t, 60*time.Second, "node2's API server at "+own+" ready", func() error {
			return expectOutput(kubectlTry(t, n2, "--server="+own, "get", "--raw", "/readyz"), "ok")
		})
	})

	t.Run("the second node leaves with reset", func(t *testing.T) {
		mustRun(t, n2, "kubeadm", "reset", "--force")
		client := "https://" + netip.AddrPortFrom(n1.Addr6(), 2379).String()
		checkVoters(t, etcdMembersAt(t, n1, client), 1)
	})
}

// ipv6InitConfig is the test bed's init configuration for an IPv6-only
// cluster whose first node is n, reached at endpoint.
func ipv6InitConfig(t *testing.T, n *testbed.Node, endpoint string) string {
	t.Helper()
	return editInitConfig(t, n, [][2]string{
		{"advertiseAddress: " + n.Addr().String(), "advertiseAddress: " + n.Addr6().String()},
		{"controlPlaneEndpoint: " + netip.AddrPortFrom(n.Addr(), 6443).String(), fmt.Sprintf("controlPlaneEndpoint: %q", endpoint)},
		{"  podSubnet: 10.244.0.0/16\n", "  podSubnet: fd00:10:244::/56\n  serviceSubnet: fd00:10:96::/112\n"},
		// The node's name resolves to its IPv4 address: name the kubelet's.
		{"  imagePullPolicy: Never\n", fmt.Sprintf("  imagePullPolicy: Never\n  kubeletExtraArgs:\n  - name: node-ip\n    value: %s\n", n.Addr6())},
	})
}

// ipv6Nodes starts node1 and node2 of a new cluster called name with the
// IPv6 network added, and writes their pod network with writeCNI.
func ipv6Nodes(t *testing.T, name string, writeCNI func(*testbed.Node) error) []*testbed.Node {
	t.Helper()
	c := newCluster(t, name)
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnableIPv6(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := writeCNI(n); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// editInitConfig is the test bed's init configuration for node n with
// each edit's first text replaced by its second; a text that is not there
// fails the test.
func editInitConfig(t *testing.T, n *testbed.Node, edits [][2]string) string {
	t.Helper()
	cfg := testbed.InitConfig(n, testbed.KubernetesVersion, "")
	for _, e := range edits {
		if !strings.Contains(cfg, e[0]) {
			t.Fatalf("the test bed's init configuration has no %q:\n%s", e[0], cfg)
		}
		cfg = strings.Replace(cfg, e[0], e[1], 1)
	}
	return cfg
}
