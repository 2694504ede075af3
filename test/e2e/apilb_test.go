package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// lbInitConfig is the test bed's init configuration (testbed.InitConfig,
// with its kubelet settings for this machine's disk) with the
// NodeLocalAPILoadBalancer gate on and no controlPlaneEndpoint.
func lbInitConfig(n *testbed.Node) string {
	endpoint := fmt.Sprintf("controlPlaneEndpoint: %s\n", netip.AddrPortFrom(n.Addr(), 6443))
	return strings.Replace(testbed.InitConfig(n, testbed.KubernetesVersion, ""), endpoint, "featureGates:\n  NodeLocalAPILoadBalancer: true\n", 1)
}

// savedUpstreams reads a node's saved API server list.
func savedUpstreams(n *testbed.Node) ([]string, error) {
	return apilb.ReadUpstreams(n.HostPath(filepath.Join("/etc/kubernetes", apilb.StateDir, apilb.UpstreamsFile)))
}

func apiServersOf(nodes ...*testbed.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Addr().String()+":6443")
	}
	slices.Sort(out)
	return out
}

// TestNodeLocalAPILoadBalancer is issue 34's "done means": three
// control-plane nodes and two workers with the balancer and no load
// balancer or VIP; the kube-apiserver of the node the workers joined
// through stops, then the whole node: the workers stay Ready, kubectl on
// a worker through the node-local endpoint keeps working, a new
// Deployment's Pods run on the workers, and the longest gap seen by a
// request loop on a worker is reported. A fourth control-plane node
// joins and every balancer learns it; a reset one is dropped.
func TestNodeLocalAPILoadBalancer(t *testing.T) {
	// Six nodes and two outages, about 8 minutes: too long for CI's
	// budget (its latest run is in docs/performance.md).
	longTest(t, "15 minutes")
	c := newCluster(t, "e2elb")
	ctx := context.Background()
	nodes, err := c.Up(ctx, "cp1", "cp2", "cp3", "cp4", "w1", "w2")
	if err != nil {
		t.Fatal(err)
	}
	cp1, cp2, cp3, cp4, w1, w2 := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4], nodes[5]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(cp1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, lbInitConfig(cp1))
	r := run(t, cp1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	if jc.certificateKey == "" || !strings.Contains(r.Stdout, "--control-plane") {
		t.Fatalf("init without controlPlaneEndpoint printed no control-plane join command:\n%s", r.Stdout)
	}
	joinCP := func(n *testbed.Node) {
		t.Helper()
		r := run(t, n, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n.Addr().String(), ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("control-plane join of %s: exit %d\n%s\n%s", n.Name, r.Code, r.Stdout, r.Stderr)
		}
	}
	joinCP(cp2)
	joinCP(cp3)
	for _, w := range []*testbed.Node{w1, w2} {
		r := run(t, w, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("join of %s: exit %d\n%s\n%s", w.Name, r.Code, r.Stdout, r.Stderr)
		}
	}
	for _, n := range []string{"cp2", "cp3", "w1", "w2"} {
		nodeReady(t, cp1, n, 120*time.Second)
	}

	// Every balancer learns the three API servers.
	three := apiServersOf(cp1, cp2, cp3)
	waitUpstreams := func(want []string, within time.Duration, on ...*testbed.Node) {
		t.Helper()
		for _, n := range on {
			eventually(t, within, n.Name+"'s balancer lists "+strings.Join(want, ","), func() error {
				got, err := savedUpstreams(n)
				if err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("saved upstreams %v", got)
				}
				return nil
			})
		}
	}
	waitUpstreams(three, 60*time.Second, cp1, cp2, cp3, w1, w2)

	// Every kubelet goes through its node's balancer, the control-plane
	// nodes' too (theirs prefer their own API server).
	for _, w := range []*testbed.Node{cp1, cp2, cp3, w1, w2} {
		kc, err := clientcmd.LoadFromFile(w.HostPath("/etc/kubernetes/kubelet.conf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range kc.Clusters {
			if cl.Server != apilb.URL || cl.TLSServerName != apilb.ServerName {
				t.Errorf("%s's kubelet.conf: server %q, tls-server-name %q; want the balancer", w.Name, cl.Server, cl.TLSServerName)
			}
		}
	}

	// kubectl on w1 through the node-local endpoint, with admin.conf's
	// credentials.
	admin, err := clientcmd.LoadFromFile(cp1.HostPath("/etc/kubernetes/admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range admin.Clusters {
		cl.Server, cl.TLSServerName = apilb.URL, apilb.ServerName
	}
	if err := clientcmd.WriteToFile(*admin, w1.HostPath("/etc/kubernetes/lb-admin.conf")); err != nil {
		t.Fatal(err)
	}
	local := func(args ...string) string {
		t.Helper()
		return mustRun(t, w1, "kubectl", append([]string{"--kubeconfig=/etc/kubernetes/lb-admin.conf"}, args...)...)
	}
	local("get", "nodes")

	// outage stops something, then checks the nodes named in ready stay
	// Ready, and that a new Deployment runs on the workers.
	outage := func(name string, stop func(), ready ...string) {
		t.Helper()
		loop := startRequestLoop(t, w1)
		time.Sleep(3 * time.Second)
		stop()
		// Longer than the node monitor's grace period (40 s): a worker
		// that lost the API server would turn NotReady meanwhile.
		time.Sleep(50 * time.Second)
		for _, n := range ready {
			st := local("get", "node", n, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			if st != "True" {
				t.Errorf("%s: %s is %q, want Ready", name, n, st)
			}
		}
		dep := "lb-" + strings.ReplaceAll(name, " ", "-")
		local("create", "deployment", dep, "--image", c.PauseImage, "--replicas", "2")
		eventually(t, 120*time.Second, name+": the Deployment's Pods run", func() error {
			out, err := w1.Command(context.Background(), "kubectl", "--kubeconfig=/etc/kubernetes/lb-admin.conf", "get", "pods", "-l", "app="+dep,
				"-o", `jsonpath={range .items[*]}{.spec.nodeName}={.status.phase}{"\n"}{end}`).Output()
			if err != nil {
				return err
			}
			lines := strings.Fields(string(out))
			if len(lines) != 2 {
				return fmt.Errorf("pods %v", lines)
			}
			for _, l := range lines {
				if !strings.HasSuffix(l, "=Running") || !(strings.HasPrefix(l, "w1=") || strings.HasPrefix(l, "w2=")) {
					return fmt.Errorf("pods %v", lines)
				}
			}
			return nil
		})
		gap, ok, failed := loop.stop(t)
		t.Logf("%s: longest gap between successful requests through w1's balancer: %v (%d requests, %d failed)", name, gap.Round(time.Millisecond), ok+failed, failed)
		if gap > 5*time.Second {
			t.Errorf("%s: the API was out of reach from w1 for %v", name, gap)
		}
	}

	manifest := cp1.HostPath("/etc/kubernetes/manifests/kube-apiserver.yaml")
	parked := cp1.HostPath("/etc/kubernetes/kube-apiserver.yaml.parked")
	// cp1 itself stays Ready: its kubelet reaches cp2's and cp3's API
	// servers through its balancer.
	outage("api server stopped", func() {
		if err := os.Rename(manifest, parked); err != nil {
			t.Fatal(err)
		}
	}, "cp1", "cp2", "cp3", "w1", "w2")

	// Back: cp1's API server is healthy again in the workers' balancers.
	if err := os.Rename(parked, manifest); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*testbed.Node{w1, w2} {
		eventually(t, 120*time.Second, w.Name+"'s balancer takes cp1 back", func() error {
			return balancerLogSays(w, "upstream "+cp1.Addr().String()+":6443 is healthy", 2)
		})
	}

	// And takes requests again: new connections from w1 spread over the
	// three (the balancer logs how many each was sent, every 10 s).
	cp1API := cp1.Addr().String() + ":6443"
	before := servedTo(w1, cp1API)
	for range 12 {
		local("get", "--raw", "/readyz")
	}
	eventually(t, 30*time.Second, "w1's balancer sends to cp1 again", func() error {
		if n := servedTo(w1, cp1API); n <= before {
			return fmt.Errorf("connections sent to %s: %d, before the requests %d", cp1API, n, before)
		}
		return nil
	})

	// A fourth control-plane node: every balancer sends to it within 30 s
	// of its join.
	joinCP(cp4)
	four := apiServersOf(cp1, cp2, cp3, cp4)
	waitUpstreams(four, 30*time.Second, cp1, cp2, cp3, cp4, w1, w2)

	// Reset it: the balancers drop it.
	if r := run(t, cp4, "kubeadm", "reset", "--force"); r.Code != 0 {
		t.Fatalf("reset of cp4: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	waitUpstreams(three, 60*time.Second, cp1, cp2, cp3, w1, w2)
	if _, err := os.Stat(cp4.HostPath(filepath.Join("/etc/kubernetes", apilb.StateDir))); !os.IsNotExist(err) {
		t.Errorf("reset left the balancer's folder on cp4: %v", err)
	}

	// The whole node the workers joined through goes away.
	outage("node gone", func() {
		if err := cp1.Down(context.Background()); err != nil {
			t.Fatal(err)
		}
	}, "cp2", "cp3", "w1", "w2")
}

// servedTo reads, in the last report line of the node's balancer log,
// how many connections it sent to addr while that upstream is up; -1 when
// there is no such report.
func servedTo(n *testbed.Node, addr string) int {
	logs, _ := filepath.Glob(n.HostPath("/var/log/pods/kube-system_" + apilb.Component + "-" + n.Name + "_*/" + apilb.Component + "/*.log"))
	re := regexp.MustCompile(regexp.QuoteMeta(" "+addr+"=up/") + `(\d+)`)
	served := -1
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			if !strings.Contains(line, "served:") {
				continue
			}
			if m := re.FindStringSubmatch(line); m != nil {
				served, _ = strconv.Atoi(m[1])
			} else {
				served = -1
			}
		}
	}
	return served
}

// balancerLogSays checks that the node's balancer logged line at least
// times times.
func balancerLogSays(n *testbed.Node, line string, times int) error {
	logs, err := filepath.Glob(n.HostPath("/var/log/pods/kube-system_" + apilb.Component + "-" + n.Name + "_*/" + apilb.Component + "/*.log"))
	if err != nil || len(logs) == 0 {
		return fmt.Errorf("no log of the balancer on %s (%v)", n.Name, err)
	}
	count := 0
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			return err
		}
		count += strings.Count(string(data), line)
	}
	if count < times {
		return fmt.Errorf("%q logged %d times", line, count)
	}
	return nil
}

// requestLoop asks /readyz through a worker's balancer over and over,
// one kubectl at a time, and records when each request ended and how.
type requestLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	out    string
}

func startRequestLoop(t *testing.T, n *testbed.Node) *requestLoop {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(n.Dir, "request-loop.log")
	script := `while :; do
  if kubectl --kubeconfig=/etc/kubernetes/lb-admin.conf --request-timeout=2s get --raw /readyz >/dev/null 2>&1; then r=ok; else r=fail; fi
  echo "$(date +%s.%N) $r"
done >` + out
	cmd := n.Command(ctx, "sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &requestLoop{cancel: cancel, done: make(chan struct{}), out: out}
	go func() { _ = cmd.Wait(); close(l.done) }()
	return l
}

// stop ends the loop and returns the longest time between two successful
// requests, and how many requests succeeded and failed.
func (l *requestLoop) stop(t *testing.T) (gap time.Duration, ok, failed int) {
	t.Helper()
	l.cancel()
	<-l.done
	f, err := os.Open(l.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		at, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		if fields[1] != "ok" {
			failed++
			continue
		}
		ok++
		if last != 0 {
			if d := time.Duration((at - last) * float64(time.Second)); d > gap {
				gap = d
			}
		}
		last = at
	}
	return gap, ok, failed
}
