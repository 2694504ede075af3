package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestRotateCAControlPlanes is issue 33's CA rotation with several
// control-plane nodes: two control-plane nodes (stacked etcd) behind the
// test bed's load balancer and a worker running a Deployment whose Pods
// call the API server with their service-account token (client-go's
// in-cluster client). A kubectl loop
// on node1 (through the load balancer) and a probe of the Deployment's
// Service path /api (each probe one call of a Pod to the API server)
// run through the whole rotation, and their failures are reported.
// prepare --upload-certs on node1, prepare --certificate-key on node2;
// trust (node2's killed while it restarts its API server, then the whole
// command, which stops at sign while the worker does not trust); the
// Deployment restarted (its Pods' clients trust both CAs); sign on each
// node (the worker's refused while node2 has not signed); the Deployment
// restarted (its Pods' tokens of the new service-account key, so that
// finish may drop the old key without waiting the hour); finish
// (node1's killed while it restarts its scheduler; the worker's refused
// until the last control-plane node finished). Afterwards every
// certificate chains to the new CAs, no trust point holds an old one,
// every node is Ready and the Pods reach the API server.
func TestRotateCAControlPlanes(t *testing.T) {
	longTest(t, "10 minutes")
	if otherKubeadm() {
		t.Skip("CA rotation is ours only")
	}
	tc := requireToolchain(t)
	c := newCluster(t, "e2ecaha")
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	t.Cleanup(func() {
		if t.Failed() {
			dumpControlPlane(t, n1, n2)
		}
	})
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ServeAPILoadBalancer(ctx, []netip.AddrPort{netip.AddrPortFrom(n1.Addr(), 6443), netip.AddrPortFrom(n2.Addr(), 6443)}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	// An API server that leaves the kubernetes Service (and fails
	// /readyz) a few seconds before it stops listening, as the guide
	// advises for several control-plane nodes: no in-cluster client
	// meets a closed port while kube-proxy catches up.
	initCfg := strings.Replace(testbed.InitConfigBehind(n1, testbed.KubernetesVersion, testbed.APILoadBalancerAddr, ""),
		"networking:\n", "apiServer:\n  extraArgs:\n  - name: shutdown-delay-duration\n    value: 5s\nnetworking:\n", 1)
	writeFile(t, cfg, initCfg)
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
		"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n2.Addr().String(), ignoreFindings())
	mustRun(t, n3, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 2*time.Minute)
	}
	kcmManifests := map[string][]byte{}
	for _, n := range []*testbed.Node{n1, n2} {
		kcmManifests[n.Name] = mustRead(t, n.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml"))
	}

	probe := startProbeOf(t, n1, n3, tc, fmt.Sprintf(probeWorkload, n3.Name, testbed.WebserverImage), "/api")
	t.Cleanup(func() { probe.stop(t) })
	loop := startAPILoop(t, n1)
	start := time.Now()
	step := func(n *testbed.Node, fail string, args ...string) result {
		t.Helper()
		r := run(t, n, "kubeadm", append([]string{"certs", "rotate-ca"}, args...)...)
		t.Logf("%s: rotate-ca %v took %v, exit %d:\n%s%s", n.Name, args, r.Took.Round(time.Millisecond), r.Code, r.Stdout, r.Stderr)
		if fail == "" && r.Code != 0 || fail != "" && (r.Code != 1 || !strings.Contains(r.Stderr, fail)) {
			loop.stop()
			t.Fatalf("%s: rotate-ca %v: exit %d, want the refusal %q", n.Name, args, r.Code, fail)
		}
		probe.mark(t, n.Name+" "+strings.Join(args, " "))
		return r
	}
	kill := func(n *testbed.Node, marker string, args ...string) {
		t.Helper()
		out := killAt(t, n, marker, append([]string{"kubeadm", "certs", "rotate-ca"}, args...)...)
		t.Logf("%s: rotate-ca %v killed after %q:\n%s", n.Name, args, marker, tail(out, 30))
	}

	// prepare: made on node1 and stored encrypted; node2 downloads them.
	prep := step(n1, "", "phase", "prepare", "--upload-certs")
	key := ""
	if _, after, ok := strings.Cut(prep.Stdout, "[rotate-ca] Using certificate key:\n"); ok {
		key, _, _ = strings.Cut(after, "\n")
	}
	if len(key) != 64 {
		t.Fatalf("prepare --upload-certs printed no certificate key:\n%s", prep.Stdout)
	}
	step(n2, "a CA rotation is under way in the cluster", "phase", "prepare")
	step(n2, "", "phase", "prepare", "--certificate-key", key)
	for _, f := range []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "etcd/ca.key", "sa.key"} {
		if a, b := mustRead(t, n1.HostPath("/etc/kubernetes/pki/rotate-ca/"+f)), mustRead(t, n2.HostPath("/etc/kubernetes/pki/rotate-ca/"+f)); string(a) != string(b) {
			t.Errorf("rotate-ca/%s differs between node1 and node2", f)
		}
	}

	// trust: node1, then node2 (killed while it restarts its API server,
	// then the whole command: trust converges, the cluster publishes the
	// new CAs, and sign refuses while the worker does not trust them).
	tr := step(n1, "", "phase", "trust")
	if !strings.Contains(tr.Stdout, "the cluster publishes them once the control-plane nodes [node2] do") {
		t.Errorf("node1's trust did not leave the publication to node2:\n%s", tr.Stdout)
	}
	kill(n2, "[rotate-ca] Restarting kube-apiserver", "phase", "trust")
	whole := step(n2, "the Nodes [node3] have not recorded the new CA", "--certificate-key", key)
	if !strings.Contains(whole.Stdout, "The cluster trusts the current and the new CAs") {
		t.Errorf("node2's trust did not wait for the publication:\n%s", whole.Stdout)
	}
	step(n3, "", "phase", "trust")

	// The Pods' client (client-go's, kept for the Pod's life) reads the
	// projected ca.crt again every 5 minutes, and the kubelet updates it
	// about a minute after kube-root-ca.crt: restarted now, as the guide
	// says, instead of waiting 6 minutes, they trust both CAs before an
	// API server serves a certificate of the new one.
	restartWorkload := func(why string) {
		t.Helper()
		kubectl(t, n1, "-n", "default", "rollout", "restart", "deployment/web")
		kubectl(t, n1, "-n", "default", "rollout", "status", "deployment/web", "--timeout=3m")
		probe.mark(t, "the Deployment restarted "+why)
	}
	restartWorkload("after trust")

	// sign: the worker's waits for both control-plane nodes.
	step(n1, "", "phase", "sign")
	step(n3, "cluster-info does not list the new cluster CA first yet", "phase", "sign")
	step(n2, "", "phase", "sign")
	step(n3, "", "phase", "sign")

	// The Pods' tokens were signed by the old service-account key, which
	// finish drops at once when told: restarted, they get tokens of the
	// new key (the alternative is waiting the hour).
	restartWorkload("after sign")

	// finish: node1 (killed while it restarts its scheduler, then run
	// again), the worker refused until node2, the last, finished.
	drop := "--" + carotation.DropOldServiceAccountKeyFlag
	kill(n1, "[rotate-ca] Restarting kube-scheduler", "phase", "finish", drop)
	fin := step(n1, "", "phase", "finish", drop)
	if !strings.Contains(fin.Stdout, "the finish phase of the last control-plane node ([node2] are left)") {
		t.Errorf("node1's finish did not leave the cluster's objects to node2:\n%s", fin.Stdout)
	}
	step(n3, "cluster-info still lists 2 CAs", "phase", "finish")
	step(n2, "", drop)
	step(n3, "", "phase", "finish")
	took := time.Since(start)
	time.Sleep(2 * time.Second) // the loops go on a little after the runs
	tries, failures := loop.stop()
	failed, total := probe.stop(t)
	t.Logf("the whole rotation took %v", took.Round(time.Second))
	t.Logf("kubectl loop through the load balancer: %d calls, %d failed, the slowest %v at %s", tries, len(failures), loop.slowest.Round(time.Millisecond), loop.slowestAt.Format("15:04:05"))
	for _, f := range failures {
		t.Logf("  %s", f)
	}
	t.Logf("  calls slower than 3 s: %v", loop.slow)
	t.Logf("Service probe of /api (a Pod's call to the API server each): %d of %d failed", failed, total)
	for _, n := range []*testbed.Node{n1, n2} {
		for _, comp := range []string{"etcd", "kube-apiserver"} {
			t.Logf("%s of %s ran: %s", comp, n.Name, containerRuns(t, n, comp))
		}
	}
	if len(failures) > 0 || failed > 0 {
		t.Errorf("calls failed during the rotation: kubectl %d of %d, Service /api %d of %d", len(failures), tries, failed, total)
	}

	newCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/ca.crt"))[0]
	newFront := caBundle(t, n1.HostPath("/etc/kubernetes/pki/front-proxy-ca.crt"))[0]
	newEtcd := caBundle(t, n1.HostPath("/etc/kubernetes/pki/etcd/ca.crt"))[0]
	t.Run("every certificate chains to the new CAs, nothing holds an old one", func(t *testing.T) {
		checkTrustPoints(t, n1, nodes, carotation.Bundle{newCA})
		for _, n := range []*testbed.Node{n1, n2} {
			for _, f := range []string{"admin.conf", "controller-manager.conf", "scheduler.conf"} {
				checkTrusts(t, n.Name+" "+f, kubeconfigCAData(t, mustRead(t, n.HostPath("/etc/kubernetes/"+f))), carotation.Bundle{newCA})
			}
			for name, want := range map[string]*x509.Certificate{"front-proxy-ca": newFront, "etcd/ca": newEtcd} {
				if b := caBundle(t, n.HostPath("/etc/kubernetes/pki/"+name+".crt")); len(b) != 1 || !b[0].Equal(want) {
					t.Errorf("%s: %s.crt holds %d CAs, want the new one alone", n.Name, name, len(b))
				}
			}
			for _, name := range []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client", "apiserver-etcd-client", "etcd/server", "etcd/peer", "etcd/healthcheck-client"} {
				ca := newCA
				switch {
				case name == "front-proxy-client":
					ca = newFront
				case strings.Contains(name, "etcd"):
					ca = newEtcd
				}
				if err := caBundle(t, n.HostPath("/etc/kubernetes/pki/"+name+".crt"))[0].CheckSignatureFrom(ca); err != nil {
					t.Errorf("%s: %s: %v", n.Name, name, err)
				}
			}
			for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf"} {
				path := n.HostPath("/etc/kubernetes/" + f)
				if _, err := os.Stat(path); os.IsNotExist(err) && f == "super-admin.conf" {
					continue // a joined control-plane node has none
				}
				leaf, err := pki.ReadKubeconfigClientCert(path)
				if err != nil || leaf.CheckSignatureFrom(newCA) != nil {
					t.Errorf("%s: %s: client certificate not of the new CA (%v)", n.Name, f, err)
				}
			}
			if got := mustRead(t, n.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml")); string(got) != string(kcmManifests[n.Name]) {
				t.Errorf("%s: the controller manager's manifest is not as before the rotation:\n%s", n.Name, got)
			}
		}
		for _, n := range nodes {
			r := run(t, n, "cat", "/var/lib/kubelet/pki/kubelet-client-current.pem")
			b, err := carotation.ParseBundle([]byte(r.Stdout))
			if err != nil || b[0].CheckSignatureFrom(newCA) != nil {
				t.Errorf("%s: the kubelet's client certificate is not of the new CA (%v)", n.Name, err)
			}
			if _, err := os.Stat(n.HostPath("/etc/kubernetes/pki/rotate-ca")); !os.IsNotExist(err) {
				t.Errorf("%s: the rotation's folder is left (%v)", n.Name, err)
			}
		}
		auth := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "extension-apiserver-authentication", "-o", "json")
		if c := strings.Count(auth, "BEGIN CERTIFICATE"); c != 2 {
			t.Errorf("extension-apiserver-authentication holds %d CAs, want the new two", c)
		}
		if a := kubectl(t, n1, "get", "nodes", "-o", "jsonpath={.items[*].metadata.annotations}"); strings.Contains(a, "rotate-ca") {
			t.Errorf("Node annotations left: %s", a)
		}
		if r := kubectlTry(t, n1, "-n", "kube-system", "get", "secret", carotation.SecretName); r.err == nil {
			t.Errorf("the Secret %s is left", carotation.SecretName)
		}
	})
	t.Run("nodes Ready, the Pods reach the API server", func(t *testing.T) {
		for _, n := range nodes {
			nodeReady(t, n1, n.Name, 60*time.Second)
		}
		ip := strings.TrimSpace(kubectl(t, n1, "-n", "default", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
		for i := 0; i < 6; i++ {
			r := run(t, n1, "curl", "-s", "-m", "10", "http://"+ip+"/api")
			if !strings.HasPrefix(r.Stdout, "ok ") || !strings.Contains(r.Stdout, "system:serviceaccount:default:default") {
				t.Errorf("a Pod's call to the API server: %q (exit %d)", r.Stdout, r.Code)
			}
		}
	})
}

// containerRuns lists when each container of a static Pod's component
// logged first and last (its CRI log files 0.log, 1.log...): the gaps are
// its restarts, the kubelet's back-off included.
func containerRuns(t *testing.T, n *testbed.Node, comp string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(n.HostPath("/var/log/pods"), "kube-system_"+comp+"-"+n.Name+"_*", comp, "*.log"))
	sort.Slice(logs, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(logs[i]), ".log"))
		b, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(logs[j]), ".log"))
		return a < b
	})
	stamp := func(line string) string {
		ts, _, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return "?"
		}
		return at.UTC().Format("15:04:05.0")
	}
	var runs []string
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		runs = append(runs, stamp(lines[0])+"-"+stamp(lines[len(lines)-1]))
	}
	return strings.Join(runs, ", ")
}
