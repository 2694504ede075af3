package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestKubeDNS makes a cluster of a control-plane node and a worker whose
// DNS addon is kube-dns (the CoreDNS feature gate off, as kubeadm v1.11
// and v1.12 took it) and has a Pod resolve the kubernetes Service's name
// through it. With KUBEADM_E2E_FULL=1 (it takes two more minutes), while
// that Pod keeps resolving, it switches the running cluster to CoreDNS and
// back to kube-dns the day-2 way (the gate changed in kubeadm-config, then
// the upgrade's addon phase; the switch back killed half-way and run
// again), counting the failed lookups; the kube-dns Service and its
// cluster IP stay throughout; then to CoreDNS once more,
// with stub domains and upstream servers in kube-dns's ConfigMap, which
// CoreDNS's Corefile must carry on. Last, reset leaves both
// nodes' folders as they were.
func TestKubeDNS(t *testing.T) {
	if otherKubeadm() {
		t.Skip("kube-dns is ours only (upstream removed it in v1.21)")
	}
	tc := requireToolchain(t)
	var log strings.Builder
	archives, err := tc.KubeDNSImages(context.Background(), &log)
	if err != nil {
		t.Fatalf("kube-dns images: %v\n%s", err, log.String())
	}
	resolveArchive, err := tc.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "e2edns")
	c.Archives = append(append(append([]string(nil), c.Archives...), archives...), resolveArchive)
	nodes, err := c.Up(context.Background(), "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
	before := map[string]map[string]string{}
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
		before[n.Name] = nodeFiles(t, n)
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, testbed.KubernetesVersion, ""),
		"networking:\n", "featureGates:\n  CoreDNS: false\nnetworking:\n", 1))
	start := time.Now()
	r := run(t, n1, "kubeadm", "init", "--config", cfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "[addons] Applied essential addon: kube-dns\n") {
		t.Errorf("init did not report kube-dns:\n%s", r.Stdout)
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	nodeReady(t, n1, "node1", 90*time.Second)
	nodeReady(t, n1, "node2", 90*time.Second)
	available(t, n1, "kube-dns", 3*time.Minute)
	t.Logf("init, join and kube-dns available: %v", time.Since(start).Round(time.Second))

	t.Run("kube-dns as kubeadm v1.12 made it", func(t *testing.T) {
		containers := kubectl(t, n1, "-n", "kube-system", "get", "deployment", "kube-dns", "-o", `jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}{" "}{end}`)
		want := "kubedns=registry.k8s.io/dns/k8s-dns-kube-dns:1.26.7 dnsmasq=registry.k8s.io/dns/k8s-dns-dnsmasq-nanny:1.26.7 sidecar=registry.k8s.io/dns/k8s-dns-sidecar:1.26.7"
		if strings.TrimSpace(containers) != want {
			t.Errorf("containers %q, want %q", containers, want)
		}
		kubectl(t, n1, "-n", "kube-system", "get", "serviceaccount/kube-dns", "configmap/kube-dns")
		if r := kubectlTry(t, n1, "-n", "kube-system", "get", "deployment", "coredns"); r.err == nil {
			t.Errorf("a CoreDNS Deployment runs beside kube-dns")
		}
		subjects := kubectl(t, n1, "get", "clusterrolebinding", "system:kube-dns", "-o", `jsonpath={.subjects[*].namespace}/{.subjects[*].name}`)
		if subjects != "kube-system/kube-dns" {
			t.Errorf("system:kube-dns binds %q", subjects)
		}
		cc := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
		if !strings.Contains(cc, "featureGates:\n  CoreDNS: false\n") {
			t.Errorf("kubeadm-config does not keep the choice:\n%s", cc)
		}
	})

	svc := func() string {
		return kubectl(t, n1, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.metadata.uid} {.spec.clusterIP}")
	}
	svcBefore := svc()
	startResolver(t, n1, "100ms")
	eventually(t, 90*time.Second, "the resolver Pod resolves the kubernetes Service through kube-dns", func() error {
		return expectOutput(kubectlTry(t, n1, "logs", "resolver", "--tail=1"), "nonempty")
	})
	if out := kubectl(t, n1, "logs", "resolver", "--tail=1"); !strings.Contains(out, " ok kubernetes.default.svc.cluster.local. 10.96.0.1") {
		t.Fatalf("the resolver Pod: %s", out)
	}

	t.Run("switched to CoreDNS and back while a Pod resolves", func(t *testing.T) {
		longTest(t, "2 min")
		for _, step := range []struct{ to, deployment, gone, killAt string }{
			{"CoreDNS", "coredns", "kube-dns", ""},
			// Killed with the Service narrowed to the new Pods: run
			// again, the switch must finish, still without a failed
			// lookup.
			{"kube-dns", "kube-dns", "coredns", "the kube-dns Service now selects only them"},
		} {
			setCoreDNSGate(t, n1, step.to == "CoreDNS")
			if step.killAt != "" {
				out := killAt(t, n1, step.killAt, "kubeadm", "upgrade", "node", "phase", "addon", "coredns")
				t.Logf("switch to %s killed at %q:\n%s", step.to, step.killAt, tail(out, 5))
			}
			r := run(t, n1, "kubeadm", "upgrade", "node", "phase", "addon", "coredns")
			t.Logf("switch to %s: %v\n%s%s", step.to, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
			if r.Code != 0 {
				t.Fatalf("switch to %s: exit %d", step.to, r.Code)
			}
			available(t, n1, step.deployment, time.Minute)
			if r := kubectlTry(t, n1, "-n", "kube-system", "get", "deployment", step.gone); r.err == nil {
				t.Errorf("after the switch to %s, Deployment %s is still there", step.to, step.gone)
			}
			if got := svc(); got != svcBefore {
				t.Errorf("after the switch to %s the kube-dns Service is %q, was %q", step.to, got, svcBefore)
			}
			if sel := kubectl(t, n1, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.selector}"); sel != `{"k8s-app":"kube-dns"}` {
				t.Errorf("after the switch to %s the Service selects %s", step.to, sel)
			}
		}
		r := mustRun(t, n1, "kubeadm", "upgrade", "node", "phase", "addon", "coredns")
		if strings.Contains(r, "Replacing") || !strings.Contains(r, "Applied essential addon: kube-dns") {
			t.Errorf("the upgrade's addon phase did not keep kube-dns:\n%s", r)
		}
		time.Sleep(2 * time.Second)
		logs := kubectl(t, n1, "logs", "resolver")
		var ok, failed int
		var failures []string
		for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
			switch f := strings.Fields(l); {
			case len(f) > 1 && f[1] == "ok":
				ok++
			case len(f) > 1 && f[1] == "fail":
				failed++
				failures = append(failures, l)
			}
		}
		t.Logf("resolver: %d lookups, %d failed", ok+failed, failed)
		if failed > 0 || ok < 50 {
			t.Errorf("resolver: %d ok, %d failed:\n%s", ok, failed, strings.Join(failures, "\n"))
		}
	})

	t.Run("kube-dns's stub domains and upstream servers go on in CoreDNS", func(t *testing.T) {
		longTest(t, "1 min")
		// Nobody queries these: the point is that CoreDNS takes the
		// Corefile they make and serves.
		patch := `{"data":{"stubDomains":"{\"stub.example\": [\"192.0.2.53\"]}","upstreamNameservers":"[\"192.0.2.54\"]"}}`
		kubectl(t, n1, "-n", "kube-system", "patch", "configmap", "kube-dns", "--type=merge", "-p", patch)
		setCoreDNSGate(t, n1, true)
		if r := run(t, n1, "kubeadm", "upgrade", "node", "phase", "addon", "coredns"); r.Code != 0 {
			t.Fatalf("switch to CoreDNS: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		available(t, n1, "coredns", time.Minute)
		corefile := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
		for _, want := range []string{"forward . 192.0.2.54 {\n", "stub.example:53 {\n", "forward . 192.0.2.53\n"} {
			if !strings.Contains(corefile, want) {
				t.Errorf("CoreDNS's Corefile lacks %q:\n%s", want, corefile)
			}
		}
		eventually(t, time.Minute, "the resolver resolves through CoreDNS", func() error {
			r := kubectlTry(t, n1, "logs", "resolver", "--tail=1")
			if r.err == nil && !strings.Contains(r.out, " ok kubernetes.default.svc.cluster.local. 10.96.0.1") {
				return fmt.Errorf("last lookup: %s", r.out)
			}
			return r.err
		})
	})

	t.Run("reset leaves the nodes as before", func(t *testing.T) {
		for _, n := range []*testbed.Node{n2, n1} {
			if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
				t.Fatalf("reset %s: exit %d\n%s%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
			if d := diffDigests(before[n.Name], nodeFiles(t, n)); len(d) > 0 {
				t.Errorf("after reset, %s differs in: %v", n.Name, d)
			}
		}
	})
}

// available waits until every replica of the kube-system Deployment name
// is updated and available.
func available(t *testing.T, n *testbed.Node, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, name+" available", func() error {
		return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "deployment", name, "-o",
			`jsonpath={.status.availableReplicas}/{.status.replicas}/{.spec.replicas}`), "2/2/2")
	})
}

// setCoreDNSGate sets the CoreDNS feature gate in the ClusterConfiguration
// of the kubeadm-config ConfigMap, as a user would with kubectl edit.
func setCoreDNSGate(t *testing.T, n *testbed.Node, on bool) {
	t.Helper()
	cc := kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
	cc = strings.Replace(cc, "featureGates:\n  CoreDNS: false\n", "", 1)
	cc = strings.Replace(cc, "featureGates:\n  CoreDNS: true\n", "", 1)
	if !on {
		cc = strings.Replace(cc, "kind: ClusterConfiguration\n", "featureGates:\n  CoreDNS: false\nkind: ClusterConfiguration\n", 1)
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{"ClusterConfiguration": cc}})
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, n, "-n", "kube-system", "patch", "configmap", "kubeadm-config", "--type=merge", "-p", string(patch))
}
