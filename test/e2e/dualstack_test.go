package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// Dual-stack networks of the test: IPv4 first, so IPv4 is the primary
// family (the one single-stack Services and the API server's advertise
// address use).
const (
	dualPodSubnet     = "10.244.0.0/16,fd00:10:244::/56"
	dualServiceSubnet = "10.96.0.0/16,fd00:10:96::/112"
)

// TestDualStack makes a dual-stack cluster, IPv4 primary: init on node1 and
// a worker that joins. The comma-separated subnets must reach the API
// server (service ranges of both families), the controller manager (a pod
// range per family for every Node) and kube-proxy, and both families'
// addresses must reach the kubelet's node IP; the real components prove
// each of them.
func TestDualStack(t *testing.T) {
	nodes := ipv6Nodes(t, "e2eds", (*testbed.Node).WriteCNIConfigDualStack)
	n1, n2 := nodes[0], nodes[1]
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, dualStackInitConfig(t, n1))

	// A new network namespace forwards neither family: with subnets of
	// both, preflight names both files (upstream's findings are the same).
	findings := []string{"FileContent--proc-sys-net-ipv4-ip_forward", "FileContent--proc-sys-net-ipv6-conf-default-forwarding", "SystemVerification"}
	r := run(t, n1, "kubeadm", "init", "phase", "preflight", "--config", cfg)
	if got := checkNames(`\[ERROR ([^\]]+)\]`, r.Stdout+r.Stderr); r.Code != 2 || !slices.Equal(got, findings) {
		t.Errorf("strict preflight: exit %d, findings %v, want exit 2 and %v\n%s%s", r.Code, got, findings, r.Stdout, r.Stderr)
	}
	ignore := "--ignore-preflight-errors=" + strings.Join(findings, ",")

	r = run(t, n1, "kubeadm", "init", "--config", cfg, ignore)
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	nodeReady(t, n1, n1.Name, 90*time.Second)
	checkDualStackNode(t, n1, n1)

	// The API server serves both service ranges: single-stack Services get
	// an IPv4 address (the primary family), a Service that asks for both
	// families gets an IPv6 one too.
	if got := kubectl(t, n1, "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIPs}"); got != `["10.96.0.1"]` {
		t.Errorf("the kubernetes Service's cluster IPs: %s", got)
	}
	if got := kubectl(t, n1, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}"); got != "10.96.0.10" {
		t.Errorf("kube-dns's cluster IP: %q", got)
	}
	svc := filepath.Join(n1.Dir, "dual-service.yaml")
	writeFile(t, svc, `apiVersion: v1
kind: Service
metadata:
  name: both
  namespace: default
spec:
  ipFamilyPolicy: RequireDualStack
  ports:
  - port: 80
`)
	kubectl(t, n1, "apply", "-f", svc)
	ips := strings.Fields(kubectl(t, n1, "get", "service", "both", "-o", "jsonpath={.spec.clusterIPs[*]}"))
	if len(ips) != 2 || !strings.HasPrefix(ips[0], "10.96.") || !strings.HasPrefix(ips[1], "fd00:10:96::") {
		t.Errorf("a RequireDualStack Service got cluster IPs %v, want one of each service subnet", ips)
	}

	// kube-proxy is told both pod ranges.
	if got := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data.config\\.conf}"); !strings.Contains(got, "clusterCIDR: "+dualPodSubnet) {
		t.Errorf("kube-proxy's configuration lacks clusterCIDR %s:\n%s", dualPodSubnet, got)
	}

	// CoreDNS's Pods get an address of each family from the CNI plugin.
	eventually(t, 2*time.Minute, "a CoreDNS Pod with both addresses", func() error {
		r := kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[0].status.podIPs[*].ip}")
		if r.err != nil {
			return r.err
		}
		if ips := strings.Fields(r.out); len(ips) != 2 || !strings.Contains(ips[1], ":") {
			return fmt.Errorf("pod IPs %q", r.out)
		}
		return nil
	})

	t.Run("a worker joins with an address of each family", func(t *testing.T) {
		join := filepath.Join(n2.Dir, "join.yaml")
		writeFile(t, join, tokenJoinConfig(jc.endpoint, jc.token, jc.hash, "2m")+fmt.Sprintf(`nodeRegistration:
  name: %s
  kubeletExtraArgs:
  - name: node-ip
    value: %s,%s
`, n2.Name, n2.Addr(), n2.Addr6()))
		r := run(t, n2, "kubeadm", "join", "--config", join, ignore)
		if r.Code != 0 {
			t.Fatalf("join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		nodeReady(t, n1, n2.Name, 90*time.Second)
		checkDualStackNode(t, n1, n2)
	})
}

// checkDualStackNode checks, through api, that node n reports an address
// of each family and was given a pod range of each.
func checkDualStackNode(t *testing.T, api, n *testbed.Node) {
	t.Helper()
	want := n.Addr().String() + " " + n.Addr6().String()
	if got := kubectl(t, api, "get", "node", n.Name, "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`); got != want {
		t.Errorf("%s's InternalIP addresses: %q, want %q", n.Name, got, want)
	}
	eventually(t, time.Minute, n.Name+"'s pod ranges", func() error {
		r := kubectlTry(t, api, "get", "node", n.Name, "-o", "jsonpath={.spec.podCIDRs[*]}")
		if r.err != nil {
			return r.err
		}
		got := strings.Fields(r.out)
		if len(got) != 2 || !strings.HasPrefix(got[0], "10.244.") || !strings.HasPrefix(got[1], "fd00:10:244:") {
			return fmt.Errorf("podCIDRs %v, want one range of each pod subnet", got)
		}
		return nil
	})
}

// dualStackInitConfig is the test bed's init configuration for a
// dual-stack cluster whose first node is n: the IPv4 endpoint, both
// families' subnets, and both node addresses for the kubelet.
func dualStackInitConfig(t *testing.T, n *testbed.Node) string {
	t.Helper()
	return editInitConfig(t, n, [][2]string{
		{"  podSubnet: 10.244.0.0/16\n", "  podSubnet: " + dualPodSubnet + "\n  serviceSubnet: " + dualServiceSubnet + "\n"},
		{"  imagePullPolicy: Never\n", fmt.Sprintf("  imagePullPolicy: Never\n  kubeletExtraArgs:\n  - name: node-ip\n    value: %s,%s\n", n.Addr(), n.Addr6())},
	})
}
