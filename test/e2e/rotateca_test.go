package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestRotateCA is a whole CA rotation on a cluster of a control-plane
// node and a worker, with a kubectl loop counting failed calls
// throughout: "kubeadm certs rotate-ca" makes the new cluster, front
// proxy and etcd CAs and service-account key on the control-plane node, and the trust phase, there (killed
// twice first, while writing and while restarting) and on the worker,
// trusts them beside the current ones everywhere (the whole command
// stops at sign while the worker has not); every trust point holds both
// CAs and a second run changes nothing. Then sign (killed once on the
// control-plane node while the renewal restarts the controller manager;
// finish refused while the worker has not signed) and finish on both
// nodes. Afterwards every certificate chains to the new CAs, no trust
// point holds an old one, the controller manager's manifest is init's
// again, both nodes are Ready, no Pod restarted but the controller
// manager's and the scheduler's, kube-proxy follows the API, and a new
// node joins with the new CA's hash. About 3 minutes.
func TestRotateCA(t *testing.T) { rotateCA(t, true) }

// TestRotateCATrust stops after the trust phase, where a new node joins
// with the hash of the current CA while the cluster trusts both.
// TestRotateCA covers the rest; this one is left to make e2e-full.
func TestRotateCATrust(t *testing.T) {
	longTest(t, "90 seconds")
	rotateCA(t, false)
}

func rotateCA(t *testing.T, full bool) {
	if otherKubeadm() {
		t.Skip("CA rotation is ours only")
	}
	c := newCluster(t, "e2eca")
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, testbed.InitConfig(n1, testbed.KubernetesVersion, ""))
	r := run(t, n1, "kubeadm", "init", "--config", cfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	nodeReady(t, n1, "node1", 90*time.Second)
	nodeReady(t, n1, "node2", 90*time.Second)
	eventually(t, 90*time.Second, "kube-proxy running on node2", func() error {
		return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "--field-selector", "spec.nodeName=node2,status.phase=Running", "-o", "name"), "nonempty")
	})
	podsBefore := podRestarts(t, n1)
	kcmManifest := mustRead(t, n1.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml"))

	loop := startAPILoop(t, n1)
	start := time.Now()
	prep := run(t, n1, "kubeadm", "certs", "rotate-ca", "phase", "prepare")
	if prep.Code != 0 {
		loop.stop()
		t.Fatalf("prepare: exit %d\n%s%s", prep.Code, prep.Stdout, prep.Stderr)
	}
	// Killed twice: while writing the files, and while restarting the
	// components; each time a restart is owed.
	pending := n1.HostPath("/etc/kubernetes/pki/rotate-ca/pending-restarts")
	for _, marker := range []string{"pki/ca.crt (trust bundle", "Restarting kube-scheduler"} {
		out := killAt(t, n1, marker, "kubeadm", "certs", "rotate-ca", "phase", "trust")
		owed, err := os.ReadFile(pending)
		t.Logf("killed after %q; restarts owed: %q", marker, owed)
		if err != nil || len(owed) == 0 {
			t.Errorf("killed after %q: no restart recorded as owed (%v):\n%s", marker, err, tail(out, 20))
		}
	}
	// The whole command: prepare and trust converge, then sign refuses
	// while the worker does not trust the new CA.
	cp := run(t, n1, "kubeadm", "certs", "rotate-ca")
	cpTook := time.Since(start)
	var worker result
	if cp.Code == 1 && strings.Contains(cp.Stderr, `the Nodes [node2] have not recorded the new CA`) {
		worker = run(t, n2, "kubeadm", "certs", "rotate-ca", "phase", "trust")
	}
	took := time.Since(start)
	t.Logf("control-plane node (prepare, trust killed twice, rotate-ca) took %v; the last run %v:\n%s%s", cpTook.Round(time.Millisecond), cp.Took.Round(time.Millisecond), cp.Stdout, cp.Stderr)
	t.Logf("worker (trust) took %v:\n%s%s", worker.Took.Round(time.Millisecond), worker.Stdout, worker.Stderr)
	if !full {
		time.Sleep(2 * time.Second) // the loop goes on a little after the runs
		tries, failures := loop.stop()
		t.Logf("both: %v", took.Round(time.Millisecond))
		checkAPILoop(t, tries, failures, 1)
	}
	if !strings.Contains(cp.Stdout, "The cluster trusts the current and the new CAs") || worker.Code != 0 {
		loop.stop()
		t.Fatalf("rotate-ca: control plane exit %d, worker exit %d", cp.Code, worker.Code)
	}
	// The restart of the scheduler that the second kill left owed ends
	// once it leads again.
	if !strings.Contains(cp.Stdout, "[rotate-ca] kube-scheduler leads (") {
		t.Errorf("trust did not wait for the restarted scheduler to lead")
	}

	newCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/rotate-ca/ca.crt"))[0]
	newFront := caBundle(t, n1.HostPath("/etc/kubernetes/pki/rotate-ca/front-proxy-ca.crt"))[0]
	newEtcd := caBundle(t, n1.HostPath("/etc/kubernetes/pki/rotate-ca/etcd/ca.crt"))[0]
	t.Run("every trust point holds both CAs", func(t *testing.T) {
		cluster := caBundle(t, n1.HostPath("/etc/kubernetes/pki/ca.crt"))
		if len(cluster) != 2 || !cluster[1].Equal(newCA) {
			t.Fatalf("ca.crt holds %d CAs, want the current and the new one", len(cluster))
		}
		if fp := caBundle(t, n1.HostPath("/etc/kubernetes/pki/front-proxy-ca.crt")); len(fp) != 2 {
			t.Errorf("front-proxy-ca.crt holds %d CAs", len(fp))
		}
		checkTrustPoints(t, n1, []*testbed.Node{n1, n2}, cluster)
		check := mustRun(t, n1, "kubeadm", "certs", "check-expiration")
		if etcdCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/etcd/ca.crt")); len(etcdCA) != 2 {
			t.Errorf("etcd/ca.crt holds %d CAs, want the current and the new one", len(etcdCA))
		}
		if !strings.Contains(check, "CA rotation under way (kubeadm certs rotate-ca):\n  ca: the old CA signs, both are trusted; signed by the new CA: none; by the old CA: admin.conf, apiserver, apiserver-kubelet-client, controller-manager.conf, kubelet.conf, scheduler.conf, super-admin.conf\n") ||
			!strings.Contains(check, "\n  etcd-ca: the old CA signs, both are trusted; signed by the new CA: none; by the old CA: apiserver-etcd-client, etcd-healthcheck-client, etcd-peer, etcd-server\n") {
			t.Errorf("check-expiration:\n%s", check)
		}
		m := string(mustRead(t, n1.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml")))
		if !strings.Contains(m, "--cluster-signing-cert-file=/etc/kubernetes/pki/rotate-ca/signer.crt") {
			t.Errorf("the controller manager does not sign with the copy of the current CA:\n%s", m)
		}
	})

	if !full {
		t.Run("Pods kept running", func(t *testing.T) { checkPodRestarts(t, n1, podsBefore) })
	}

	t.Run("a second run changes nothing", func(t *testing.T) {
		d1, d2 := treeDigest(t, n1.HostPath("/etc/kubernetes")), treeDigest(t, n2.HostPath("/etc/kubernetes"))
		r1 := run(t, n1, "kubeadm", "certs", "rotate-ca", "phase", "trust")
		r2 := run(t, n2, "kubeadm", "certs", "rotate-ca", "phase", "trust")
		if r1.Code != 0 || r2.Code != 0 {
			t.Fatalf("exit %d %d\n%s%s\n%s%s", r1.Code, r2.Code, r1.Stdout, r1.Stderr, r2.Stdout, r2.Stderr)
		}
		if d := diffDigests(d1, treeDigest(t, n1.HostPath("/etc/kubernetes"))); len(d) > 0 {
			t.Errorf("node1: changed %v\n%s", d, r1.Stdout)
		}
		if d := diffDigests(d2, treeDigest(t, n2.HostPath("/etc/kubernetes"))); len(d) > 0 {
			t.Errorf("node2: changed %v\n%s", d, r2.Stdout)
		}
		for _, out := range []string{r1.Stdout, r2.Stdout} {
			if strings.Contains(out, "Restarting") || strings.Contains(out, "Wrote") {
				t.Errorf("second run:\n%s", out)
			}
		}
	})

	if full {
		// Trust restarted the Pods whose client reads its CA at start
		// (kube-proxy, CoreDNS): kube-proxy's open connection would
		// survive sign, but sign and finish restart the API server, which
		// serves a certificate of the new CA by then.
		for _, w := range []string{"daemonset/kube-proxy", "deployment/coredns"} {
			got := kubectl(t, n1, "-n", "kube-system", "get", w, "-o", `jsonpath={.spec.template.metadata.annotations.kubeadm\.kubernetes\.io/rotate-ca-restarted-for}`)
			if got != bootstraptoken.CACertHash(newCA) {
				t.Errorf("%s: not restarted by trust for the new CA (%q)", w, got)
			}
		}
		eventually(t, 90*time.Second, "kube-proxy running on node2", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "--field-selector", "spec.nodeName=node2,status.phase=Running", "-o", "name"), "nonempty")
		})
		signAndFinish(t, n1, n2, loop, start)
		if t.Failed() {
			return
		}
		t.Run("every certificate chains to the new CAs, nothing holds an old one", func(t *testing.T) {
			checkTrustPoints(t, n1, []*testbed.Node{n1, n2}, carotation.Bundle{newCA})
			if fp := caBundle(t, n1.HostPath("/etc/kubernetes/pki/front-proxy-ca.crt")); len(fp) != 1 || !fp[0].Equal(newFront) {
				t.Errorf("front-proxy-ca.crt holds %d CAs", len(fp))
			}
			auth := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "extension-apiserver-authentication", "-o", "json")
			if strings.Count(auth, "BEGIN CERTIFICATE") != 2 {
				t.Errorf("extension-apiserver-authentication holds %d CAs, want the new two:\n%s", strings.Count(auth, "BEGIN CERTIFICATE"), auth)
			}
			if etcdCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/etcd/ca.crt")); len(etcdCA) != 1 || !etcdCA[0].Equal(newEtcd) {
				t.Errorf("etcd/ca.crt holds %d CAs, want the new one alone", len(etcdCA))
			}
			for _, name := range []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client", "apiserver-etcd-client", "etcd/server", "etcd/peer", "etcd/healthcheck-client"} {
				leaf := caBundle(t, n1.HostPath("/etc/kubernetes/pki/"+name+".crt"))[0]
				ca := newCA
				switch {
				case name == "front-proxy-client":
					ca = newFront
				case strings.Contains(name, "etcd"):
					ca = newEtcd
				}
				if err := leaf.CheckSignatureFrom(ca); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf"} {
				leaf, err := pki.ReadKubeconfigClientCert(n1.HostPath("/etc/kubernetes/" + f))
				if err != nil || leaf.CheckSignatureFrom(newCA) != nil {
					t.Errorf("%s: client certificate not of the new CA (%v)", f, err)
				}
			}
			for _, n := range []*testbed.Node{n1, n2} {
				r := run(t, n, "cat", "/var/lib/kubelet/pki/kubelet-client-current.pem")
				b, err := carotation.ParseBundle([]byte(r.Stdout))
				if err != nil || b[0].CheckSignatureFrom(newCA) != nil {
					t.Errorf("%s: the kubelet's client certificate is not of the new CA (%v)", n.Name, err)
				}
			}
			if got := mustRead(t, n1.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml")); string(got) != string(kcmManifest) {
				t.Errorf("the controller manager's manifest is not init's again:\n%s", got)
			}
			for _, n := range []*testbed.Node{n1, n2} {
				if _, err := os.Stat(n.HostPath("/etc/kubernetes/pki/rotate-ca")); !os.IsNotExist(err) {
					t.Errorf("%s: the rotation's folder is left (%v)", n.Name, err)
				}
			}
			if a := kubectl(t, n1, "get", "nodes", "-o", "jsonpath={.items[*].metadata.annotations}"); strings.Contains(a, "rotate-ca") {
				t.Errorf("Node annotations left: %s", a)
			}
			if check := mustRun(t, n1, "kubeadm", "certs", "check-expiration"); strings.Contains(check, "CA rotation") {
				t.Errorf("check-expiration:\n%s", check)
			}
		})
		t.Run("nodes Ready, Pods kept running", func(t *testing.T) {
			nodeReady(t, n1, "node1", 30*time.Second)
			nodeReady(t, n1, "node2", 30*time.Second)
			checkPodRestarts(t, n1, podsBefore)
		})
		t.Run("a second finish changes nothing", func(t *testing.T) {
			d1, d2 := treeDigest(t, n1.HostPath("/etc/kubernetes")), treeDigest(t, n2.HostPath("/etc/kubernetes"))
			mustRun(t, n1, "kubeadm", "certs", "rotate-ca", "phase", "finish")
			mustRun(t, n2, "kubeadm", "certs", "rotate-ca", "phase", "finish")
			if d := diffDigests(d1, treeDigest(t, n1.HostPath("/etc/kubernetes"))); len(d) > 0 {
				t.Errorf("node1: changed %v", d)
			}
			if d := diffDigests(d2, treeDigest(t, n2.HostPath("/etc/kubernetes"))); len(d) > 0 {
				t.Errorf("node2: changed %v", d)
			}
		})
	}

	t.Run("kube-proxy on the worker follows a new Service", func(t *testing.T) {
		kubectl(t, n1, "create", "service", "clusterip", "e2eca", "--tcp=80:80")
		eventually(t, 60*time.Second, "kube-proxy programs default/e2eca on node2", func() error {
			// A Service without endpoints is a REJECT rule of the filter
			// table, not a nat one: look in every table.
			r := run(t, n2, "iptables-save")
			if !strings.Contains(r.Stdout, "default/e2eca") {
				return fmt.Errorf("not in node2's rules yet")
			}
			return nil
		})
	})

	t.Run("a new node joins with the signing CA's hash", func(t *testing.T) {
		hash := jc.hash
		if full {
			hash = bootstraptoken.CACertHash(newCA)
		}
		r := run(t, n3, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", hash, ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		nodeReady(t, n1, "node3", 90*time.Second)
		cluster := caBundle(t, n1.HostPath("/etc/kubernetes/pki/ca.crt"))
		checkTrusts(t, "node3 kubelet.conf", kubeconfigCAData(t, mustRead(t, n3.HostPath("/etc/kubernetes/kubelet.conf"))), cluster)
	})
}

// signAndFinish runs the second half of the rotation: sign on the
// control-plane node (killed once while the renewal restarts the
// controller manager), finish refused while the worker lags, sign on the
// worker, finish on both; then it stops the loop and checks it.
func signAndFinish(t *testing.T, n1, n2 *testbed.Node, loop *apiLoop, start time.Time) {
	t.Helper()
	signStart := time.Now()
	// A dry run lists what sign would change, and changes nothing.
	before := treeDigest(t, n1.HostPath("/etc/kubernetes"))
	dry := mustRun(t, n1, "kubeadm", "certs", "rotate-ca", "phase", "sign", "--dry-run")
	for _, want := range []string{"Would write /etc/kubernetes/pki/ca.key (the key of the new Kubernetes cluster CA)",
		"Would re-issue apiserver with the new CA and have kube-apiserver use it",
		"Would re-issue etcd-server with the new CA and have etcd use it",
		"Would issue a kubelet client certificate of the new CA (system:node:node1)"} {
		if !strings.Contains(dry, want) {
			t.Errorf("sign --dry-run does not say %q:\n%s", want, dry)
		}
	}
	if d := diffDigests(before, treeDigest(t, n1.HostPath("/etc/kubernetes"))); len(d) > 0 {
		t.Errorf("sign --dry-run changed %v", d)
	}
	out := killAt(t, n1, "[certs-renewal] Restarting kube-controller-manager", "kubeadm", "certs", "rotate-ca", "phase", "sign")
	t.Logf("sign killed while restarting the controller manager:\n%s", tail(out, 30))
	steps := []struct {
		n    *testbed.Node
		args []string
		fail string // the refusal expected, "" for success
	}{
		{n1, []string{"phase", "sign"}, ""},
		{n1, []string{"phase", "finish"}, `the Nodes [node2] have not recorded the new CA`},
		{n2, []string{"phase", "sign"}, ""},
		// The whole command: prepare, trust and sign change nothing,
		// finish (told not to wait the hour for the Pods' tokens of the
		// old service-account key).
		{n1, []string{"--drop-old-service-account-key-now"}, ""},
		{n2, []string{"phase", "finish"}, ""},
	}
	for _, s := range steps {
		r := run(t, s.n, "kubeadm", append([]string{"certs", "rotate-ca"}, s.args...)...)
		t.Logf("%s: rotate-ca %v took %v, exit %d:\n%s%s", s.n.Name, s.args, r.Took.Round(time.Millisecond), r.Code, r.Stdout, r.Stderr)
		if s.fail == "" && r.Code != 0 || s.fail != "" && (r.Code != 1 || !strings.Contains(r.Stderr, s.fail)) {
			loop.stop()
			t.Fatalf("%s: rotate-ca %v: exit %d, want the refusal %q", s.n.Name, s.args, r.Code, s.fail)
		}
	}
	t.Logf("sign and finish on both nodes took %v; the whole rotation %v", time.Since(signStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the loop goes on a little after the runs
	tries, failures := loop.stop()
	checkAPILoop(t, tries, failures, 3)
}

// checkAPILoop checks the kubectl loop through a rotation: on this one
// control-plane node a call may fail only while the API server restarts
// to read the etcd CA file and the service-account keys (trust, sign and
// finish: apiRestarts of them): as a
// call to an API server that is away fails (refused, cut), or, in the
// seconds after it serves again, Forbidden until its authorizer has read
// the RBAC objects. Never for a certificate, a credential or etcd.
func checkAPILoop(t *testing.T, tries int, failures []string, apiRestarts int) {
	t.Helper()
	away := []string{"was refused", "connection refused", "EOF", "connection reset", "GOAWAY", "ServiceUnavailable", "shutting down", "TLS handshake timeout"}
	// A window is one restart. An API server told to stop first answers
	// "shutting down" while it drains, and only stops listening up to
	// ~15 s later, so a window holding nothing else yet stays open longer.
	type window struct {
		from, to time.Time
		draining bool
	}
	var windows []window
	var starting []time.Time
	var other []string
	awayN := 0
	for _, f := range failures {
		at, err := time.Parse("15:04:05.000", strings.SplitN(f, ": ", 2)[0])
		switch {
		case err != nil:
			other = append(other, f)
		case strings.Contains(f, "(Forbidden)"):
			starting = append(starting, at)
		case !slices.ContainsFunc(away, func(s string) bool { return strings.Contains(f, s) }):
			other = append(other, f)
		case len(windows) > 0 && (at.Sub(windows[len(windows)-1].to) <= 5*time.Second ||
			windows[len(windows)-1].draining && at.Sub(windows[len(windows)-1].to) <= 20*time.Second):
			w := &windows[len(windows)-1]
			w.to = at
			w.draining = w.draining && strings.Contains(f, "shutting down")
			awayN++
		default:
			windows = append(windows, window{at, at, strings.Contains(f, "shutting down")})
			awayN++
		}
	}
	for _, at := range starting {
		if !slices.ContainsFunc(windows, func(w window) bool { return !at.Before(w.to) && at.Sub(w.to) <= 10*time.Second }) {
			other = append(other, at.Format("15:04:05.000")+": Forbidden, not just after the API server came back")
		}
	}
	var spans []string
	for _, w := range windows {
		spans = append(spans, fmt.Sprintf("%s for %v", w.from.Format("15:04:05"), w.to.Sub(w.from).Round(100*time.Millisecond)))
	}
	t.Logf("kubectl loop through the rotation: %d tries; %d failed while the API server was away (%d restarts made: %v), %d Forbidden just after it came back, %d otherwise",
		tries, awayN, apiRestarts, spans, len(starting), len(other))
	if len(other) > 0 || len(windows) > apiRestarts || tries < 10 {
		t.Errorf("kubectl loop: %d tries, failures:\n%s", tries, strings.Join(failures, "\n"))
	}
}

// checkTrustPoints checks that the kubeconfig files of cp, the kubelets'
// kubeconfig and client CA file of nodes, cluster-info and every
// kube-root-ca.crt trust exactly cluster.
func checkTrustPoints(t *testing.T, cp *testbed.Node, nodes []*testbed.Node, cluster carotation.Bundle) {
	t.Helper()
	for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf"} {
		checkTrusts(t, cp.Name+" "+f, kubeconfigCAData(t, mustRead(t, cp.HostPath("/etc/kubernetes/"+f))), cluster)
	}
	for _, n := range nodes {
		checkTrusts(t, n.Name+" kubelet.conf", kubeconfigCAData(t, mustRead(t, n.HostPath("/etc/kubernetes/kubelet.conf"))), cluster)
		checkTrusts(t, n.Name+" ca.crt", caBundle(t, n.HostPath("/etc/kubernetes/pki/ca.crt")), cluster)
	}
	info := kubectl(t, cp, "-n", "kube-public", "get", "configmap", "cluster-info", "-o", "jsonpath={.data.kubeconfig}")
	checkTrusts(t, "cluster-info", kubeconfigCAData(t, []byte(info)), cluster)
	roots := kubectl(t, cp, "get", "configmap", "-A", "--field-selector", "metadata.name=kube-root-ca.crt", "-o", `jsonpath={range .items[*]}{.metadata.namespace}{"\n"}{end}`)
	for _, ns := range strings.Fields(roots) {
		data := kubectl(t, cp, "-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", `jsonpath={.data.ca\.crt}`)
		b, err := carotation.ParseBundle([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		checkTrusts(t, ns+"/kube-root-ca.crt", b, cluster)
	}
}

// checkPodRestarts checks that no Pod but the control plane's
// (restarted on purpose: etcd and the API server for the etcd CA and the
// service-account key, the controller manager and the scheduler for
// their kubeconfig and the key, and these two again when the API server
// was away longer than their leader election allows) restarted since
// before.
func checkPodRestarts(t *testing.T, n *testbed.Node, before map[string]int) {
	t.Helper()
	after := podRestarts(t, n)
	for pod, c := range before {
		if strings.HasPrefix(pod, "kube-controller-manager-") || strings.HasPrefix(pod, "kube-scheduler-") ||
			strings.HasPrefix(pod, "etcd-") || strings.HasPrefix(pod, "kube-apiserver-") ||
			strings.HasPrefix(pod, "kube-proxy-") || strings.HasPrefix(pod, "coredns-") { // replaced by trust
			continue // restarted on purpose
		}
		if after[pod] != c {
			t.Errorf("%s: %d restarts, %d before", pod, after[pod], c)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func caBundle(t *testing.T, path string) carotation.Bundle {
	t.Helper()
	b, err := carotation.ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kubeconfigCAData returns the CAs the kubeconfig's current cluster (or
// its only cluster) trusts.
func kubeconfigCAData(t *testing.T, data []byte) carotation.Bundle {
	t.Helper()
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	if ctx := cfg.Contexts[cfg.CurrentContext]; ctx != nil {
		name = ctx.Cluster
	}
	cl := cfg.Clusters[name]
	if cl == nil {
		for _, c := range cfg.Clusters {
			cl = c
		}
	}
	if cl == nil {
		t.Fatal("no cluster in the kubeconfig")
	}
	b, err := carotation.ParseBundle(cl.CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkTrusts checks that got holds exactly the CAs of want.
func checkTrusts(t *testing.T, what string, got, want carotation.Bundle) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s trusts %d CAs, want %d", what, len(got), len(want))
		return
	}
	for _, c := range want {
		if !got.Contains(c) {
			t.Errorf("%s does not trust CA serial %s", what, c.SerialNumber)
		}
	}
}

// podRestarts maps every Pod of the cluster to the sum of its containers'
// restart counts.
func podRestarts(t *testing.T, n *testbed.Node) map[string]int {
	t.Helper()
	out := kubectl(t, n, "get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{range .status.containerStatuses[*]}{.restartCount}{" "}{end}{"\n"}{end}`)
	m := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		sum := 0
		for _, x := range f[1:] {
			var v int
			fmt.Sscan(x, &v)
			sum += v
		}
		m[f[0]] = sum
	}
	return m
}
