package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// selfHostedComponents are the components a self-hosted control plane runs
// from DaemonSets.
var selfHostedComponents = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// TestSelfHostedControlPlane makes a cluster of a control-plane node and a
// worker with the SelfHosting feature gate: init pivots the control plane
// to DaemonSets (etcd stays static) and keeps checkpoints; a Pod on the
// worker resolves the kubernetes Service's name through the cluster's DNS;
// upgrade diff reads the checkpoints; the control-plane node is restarted (its boot
// program stopped with everything on it, then started again) and the
// control plane comes back from its DaemonSets by itself, the checkpoints
// stepping aside; unpivot returns it to static Pods; pivot on the running
// cluster makes it self-hosted again; reset leaves both nodes as before.
func TestSelfHostedControlPlane(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the self-hosted control plane is ours only (upstream removed it)")
	}
	// Full-only (docs/testbed.md has its times).
	longTest(t, "4–7 minutes")
	tc := requireToolchain(t)
	resolveArchive, err := tc.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "e2esh")
	c.Archives = append(slices.Clone(c.Archives), resolveArchive)
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
	cfg := n1.Dir + "/kubeadm.yaml"
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, testbed.KubernetesVersion, ""),
		"networking:\n", "featureGates:\n  SelfHosting: true\nnetworking:\n", 1))
	start := time.Now()
	r := run(t, n1, "kubeadm", "init", "--config", cfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("init (with the pivot): %v", r.Took.Round(time.Millisecond))
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.HasPrefix(l, "[self-hosted]") {
			t.Log(l)
		}
	}
	if !strings.Contains(r.Stdout, "Your Kubernetes control-plane has initialized successfully!") {
		t.Errorf("init did not print its banner:\n%s", r.Stdout)
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	nodeReady(t, n1, "node1", 90*time.Second)
	nodeReady(t, n1, "node2", 90*time.Second)
	t.Logf("init, join and both nodes Ready: %v", time.Since(start).Round(time.Second))

	t.Run("the control plane runs from DaemonSets", func(t *testing.T) { checkSelfHosted(t, n1) })

	t.Run("a Pod resolves the kubernetes Service through the cluster DNS", func(t *testing.T) {
		available(t, n1, "coredns", 3*time.Minute)
		startResolver(t, n1, "500ms")
		resolverLatestAnswers(t, n1)
	})

	t.Run("upgrade diff compares with the checkpoints", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "upgrade", "diff", testbed.KubernetesVersion)
		if r.Code != 0 {
			t.Errorf("upgrade diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("the control plane comes back after a restart of its node", func(t *testing.T) {
		t.Cleanup(func() {
			if t.Failed() {
				dumpSelfHosted(t, n1)
			}
		})
		restarted := time.Now()
		if err := n1.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Logf("node1 stopped and booted again: %v", time.Since(restarted).Round(100*time.Millisecond))
		eventually(t, 2*time.Minute, "the API server answers", func() error {
			return expectOutput(kubectlTry(t, n1, "get", "--raw", "/readyz"), "ok")
		})
		t.Logf("the API server answered %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
		// The DaemonSets' status may still be the one from before the
		// restart: each component's Pod must be ready with a container
		// started since.
		eventually(t, 2*time.Minute, "the control plane runs from its DaemonSets again", func() error {
			if out := mustRun(t, n1, "ls", "/etc/kubernetes/manifests"); !noCheckpointActive(out) {
				return fmt.Errorf("checkpoints in the manifest folder: %q", out)
			}
			for _, comp := range selfHostedComponents {
				r := kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=self-hosted-"+comp, "-o",
					`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}`)
				if r.err != nil {
					return r.err
				}
				ready, started, _ := strings.Cut(r.out, " ")
				at, err := time.Parse(time.RFC3339, started)
				if ready != "True" || err != nil || at.Before(restarted.Truncate(time.Second)) {
					return fmt.Errorf("the Pod of self-hosted-%s: %q", comp, r.out)
				}
				if err := expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "daemonset", "self-hosted-"+comp,
					"-o", "jsonpath={.status.numberReady}"), "1"); err != nil {
					return fmt.Errorf("DaemonSet self-hosted-%s: %w", comp, err)
				}
			}
			return expectOutput(kubectlTry(t, n1, "get", "--raw", "/readyz"), "ok")
		})
		t.Logf("the control plane ran from its DaemonSets %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
		nodeReady(t, n1, "node1", 2*time.Minute)
		eventually(t, 90*time.Second, "the resolver Pod still resolves", func() error {
			out := kubectlTry(t, n1, "logs", "resolver", "--tail=1")
			if out.err == nil && !strings.Contains(out.out, " ok ") {
				return fmt.Errorf("%s", out.out)
			}
			return out.err
		})
		checkSelfHosted(t, n1)
	})

	t.Run("unpivot returns to static Pods", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "alpha", "selfhosting", "unpivot", "--force")
		if r.Code != 0 {
			t.Fatalf("unpivot: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("unpivot: %v", r.Took.Round(100*time.Millisecond))
		out := mustRun(t, n1, "ls", "/etc/kubernetes/manifests")
		for _, comp := range selfHostedComponents {
			if !strings.Contains(out, comp+".yaml") {
				t.Errorf("no static manifest of %s: %s", comp, out)
			}
		}
		if strings.Contains(out, "self-hosted-checkpointer") {
			t.Errorf("the checkpointer is still there: %s", out)
		}
		if ds := kubectl(t, n1, "-n", "kube-system", "get", "daemonsets", "-o", "name"); strings.Contains(ds, "self-hosted-") {
			t.Errorf("DaemonSets left: %s", ds)
		}
		if r := run(t, n1, "ls", "/etc/kubernetes/self-hosted"); r.Code == 0 {
			t.Errorf("the checkpoint folder is left: %s", r.Stdout)
		}
		if cc := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}"); strings.Contains(cc, "SelfHosting") {
			t.Errorf("kubeadm-config still has the gate:\n%s", cc)
		}
		eventually(t, time.Minute, "the static API server's mirror Pod", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", "kube-apiserver-node1", "-o", "jsonpath={.status.phase}"), "Running")
		})
	})

	t.Run("pivot makes the running cluster self-hosted again", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "alpha", "selfhosting", "pivot", "--force")
		if r.Code != 0 {
			t.Fatalf("pivot: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("pivot: %v", r.Took.Round(100*time.Millisecond))
		checkSelfHosted(t, n1)
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
		if r := run(t, n1, "ls", "/var/lib/kubeadm/kubeadm"); r.Code == 0 {
			t.Error("reset left the checkpointer's kubeadm binary")
		}
	})
}

// noCheckpointActive reports whether a listing of the manifest folder holds
// no control-plane checkpoint (etcd's and the checkpointer's manifests
// belong there).
func noCheckpointActive(ls string) bool {
	for _, comp := range selfHostedComponents {
		if strings.Contains(ls, comp+".yaml") {
			return false
		}
	}
	return true
}

// checkSelfHosted checks a self-hosted control plane: each component's
// DaemonSet has its Pod ready on node1, no static manifest of it is in the
// manifest folder, its checkpoint is kept, the checkpointer runs, and
// kubeadm-config records the mode.
func checkSelfHosted(t *testing.T, n1 *testbed.Node) {
	t.Helper()
	manifests := mustRun(t, n1, "ls", "/etc/kubernetes/manifests")
	checkpoints := mustRun(t, n1, "ls", "/etc/kubernetes/self-hosted")
	for _, comp := range selfHostedComponents {
		if strings.Contains(manifests, comp+".yaml") {
			t.Errorf("the static manifest of %s is in the manifest folder: %s", comp, manifests)
		}
		if !strings.Contains(checkpoints, comp+".yaml") {
			t.Errorf("no checkpoint of %s: %s", comp, checkpoints)
		}
		got := kubectl(t, n1, "-n", "kube-system", "get", "daemonset", "self-hosted-"+comp, "-o",
			`jsonpath={.status.numberReady}/{.spec.template.spec.dnsPolicy}/{.spec.template.spec.nodeSelector}`)
		if want := `1/ClusterFirstWithHostNet/{"node-role.kubernetes.io/control-plane":""}`; got != want {
			t.Errorf("DaemonSet self-hosted-%s: %s, want %s", comp, got, want)
		}
		pods := kubectl(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=self-hosted-"+comp, "-o",
			`jsonpath={range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}`)
		if strings.TrimSpace(pods) != "node1 Running" {
			t.Errorf("Pods of self-hosted-%s: %q", comp, pods)
		}
	}
	if !strings.Contains(manifests, "etcd.yaml") || !strings.Contains(manifests, "self-hosted-checkpointer.yaml") {
		t.Errorf("the manifest folder lacks etcd or the checkpointer: %s", manifests)
	}
	if got := kubectl(t, n1, "-n", "kube-system", "get", "pod", "self-hosted-checkpointer-node1", "-o", "jsonpath={.status.phase}"); got != "Running" {
		t.Errorf("the checkpointer's Pod is %q", got)
	}
	cc := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
	if !strings.Contains(cc, "SelfHosting: true") {
		t.Errorf("kubeadm-config does not keep the choice:\n%s", cc)
	}
	if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
		t.Errorf("/readyz: %q", out)
	}
}

// dumpSelfHosted logs what a failed test of a self-hosted control plane
// needs to be understood: the Pods of kube-system and the checkpointer's
// log.
func dumpSelfHosted(t *testing.T, n1 *testbed.Node) {
	t.Helper()
	r := kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-o", "wide")
	t.Logf("---- Pods of kube-system:\n%s%v", r.out, r.err)
	r = kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].state} {.status.containerStatuses[0].lastState}{"\n"}{end}`)
	t.Logf("---- their containers:\n%s%v", r.out, r.err)
	r = kubectlTry(t, n1, "-n", "kube-system", "logs", "self-hosted-checkpointer-node1")
	t.Logf("---- the checkpointer's log:\n%s%v", r.out, r.err)
	t.Logf("---- the manifest folder: %s", run(t, n1, "ls", "-l", "--time-style=+%T", "/etc/kubernetes/manifests").Stdout)
}

// TestSelfHostedUpgrade makes a self-hosted cluster of a control-plane node
// and a worker at the older release, upgrades it with upgrade apply (etcd
// as a static Pod, the API server, the controller manager and the
// scheduler through their checkpoints and DaemonSets, on the only
// control-plane node), checks the control plane and DNS at the new
// version, that upgrade node finds everything up to date, and that reset
// leaves both nodes as before.
func TestSelfHostedUpgrade(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the self-hosted control plane is ours only (upstream removed it)")
	}
	longTest(t, "8 minutes")
	from, to := requireUpgradeToolchains(t)
	testSelfHostedUpgrade(t, from, to, "e2eshu")
}

// TestSelfHostedPatchUpgrade is TestSelfHostedUpgrade for a patch release
// (testbed.PatchFromVersion to testbed.UpgradeFromVersion; etcd stays).
func TestSelfHostedPatchUpgrade(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the self-hosted control plane is ours only (upstream removed it)")
	}
	longTest(t, "7 minutes")
	from, to := requirePatchToolchains(t)
	testSelfHostedUpgrade(t, from, to, "e2eshp")
}

func testSelfHostedUpgrade(t *testing.T, from, to *testbed.Toolchain, name string) {
	oldV, newV := from.KubernetesVersion, to.KubernetesVersion
	oldEtcd, newEtcd := imageTag(imageRef(t, from, "etcd")), imageTag(imageRef(t, to, "etcd"))
	resolveArchive, err := to.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := manageCluster(t, from.UpgradeCluster(to, name, clusterStateDir(name), testWriter{t}))
	c.Archives = append(slices.Clone(c.Archives), resolveArchive)
	// Below the current release (the patch upgrade), our kubeadm still
	// deploys its own CoreDNS, whose image the current toolchain has.
	older := newV != testbed.KubernetesVersion
	if older {
		for _, a := range requireToolchain(t).Archives {
			if strings.Contains(filepath.Base(a), "coredns") {
				c.Archives = append(c.Archives, a)
			}
		}
	}
	nodes, err := c.Up(context.Background(), "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
	t.Cleanup(func() {
		if t.Failed() {
			dumpSelfHosted(t, n1)
		}
	})
	before := map[string]map[string]string{}
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
		before[n.Name] = nodeFiles(t, n)
	}
	cfg := n1.Dir + "/kubeadm.yaml"
	// etcd at the older release's version: the test bed has no other
	// image of it (kubeadm's own choice for an older release may be newer).
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, oldV, ""), "networking:\n",
		"featureGates:\n  SelfHosting: true\netcd:\n  local:\n    imageTag: "+oldEtcd+"\nnetworking:\n", 1))
	start := initWithWorker(t, n1, n2, cfg, oldV)
	nodesReadyAt(t, n1, nodes, oldV)
	checkSelfHosted(t, n1)
	t.Logf("a self-hosted cluster at %s with etcd %s: %v", oldV, oldEtcd, time.Since(start).Round(time.Second))
	if oldEtcd != newEtcd {
		// The administrator lets kubeadm choose etcd's version again.
		editClusterConfiguration(t, n1, func(doc string) string {
			return regexp.MustCompile(`(?m)^\s+imageTag: `+regexp.QuoteMeta(oldEtcd)+`\n`).ReplaceAllString(doc, "")
		})
	}
	upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
	if older {
		// A target a minor below kubeadm's own is a skew to force.
		writeFile(t, upgradeCfg, forcedUpgradeConfiguration(""))
	} else {
		writeFile(t, upgradeCfg, upgradeConfiguration(""))
	}

	t.Run("plan", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "upgrade", "plan", newV, "--config", upgradeCfg)
		row := regexp.MustCompile(`(?m)^\s*kube-apiserver\s.*` + regexp.QuoteMeta(oldV) + `\s.*` + regexp.QuoteMeta(newV) + `\b`)
		if r.Code != 0 || !row.MatchString(r.Stdout) {
			t.Errorf("upgrade plan: exit %d, no kube-apiserver line from %s to %s\n%s%s", r.Code, oldV, newV, r.Stdout, r.Stderr)
		}
	})

	t.Run("apply", func(t *testing.T) {
		r := runWithin(t, 15*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(l, "[upgrade/self-hosted]") || strings.Contains(l, "[upgrade/etcd]") {
				t.Log(l)
			}
		}
		if r.Code != 0 {
			t.Fatalf("upgrade apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("upgrade apply took %v", r.Took.Round(100*time.Millisecond))
		if !strings.Contains(r.Stdout, "[upgrade] SUCCESS! A control plane node of your cluster was upgraded to \""+newV+"\".") {
			t.Errorf("no success line:\n%s", r.Stdout)
		}
		// The DaemonSets' status follows from the controller manager.
		eventually(t, 2*time.Minute, "the DaemonSets report their new Pods ready", func() error {
			for _, comp := range selfHostedComponents {
				if err := expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "daemonset", "self-hosted-"+comp,
					"-o", "jsonpath={.status.numberReady}/{.status.updatedNumberScheduled}"), "1/1"); err != nil {
					return fmt.Errorf("DaemonSet self-hosted-%s: %w", comp, err)
				}
			}
			return nil
		})
		checkSelfHosted(t, n1)
		for _, comp := range selfHostedComponents {
			want := imageRef(t, to, comp)
			if got := kubectl(t, n1, "-n", "kube-system", "get", "daemonset", "self-hosted-"+comp, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != want {
				t.Errorf("DaemonSet self-hosted-%s runs %q, want %s", comp, got, want)
			}
			if got := kubectl(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=self-hosted-"+comp, "-o", "jsonpath={.items[*].spec.containers[0].image}"); got != want {
				t.Errorf("the Pod of self-hosted-%s runs %q, want %s", comp, got, want)
			}
			if got := manifestImage(t, n1.HostPath("/etc/kubernetes/self-hosted/"+comp+".yaml")); got != want {
				t.Errorf("the checkpoint of %s has %q, want %s", comp, got, want)
			}
		}
		if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+newV+`"`) {
			t.Errorf("the API server is not at %s:\n%s", newV, out)
		}
		if got := manifestImage(t, n1.HostPath("/etc/kubernetes/manifests/etcd.yaml")); !strings.HasSuffix(got, ":"+newEtcd) {
			t.Errorf("etcd's manifest has %q, want etcd %s", got, newEtcd)
		}
		checkKubeProxy(t, n1, to)
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("a Pod resolves the kubernetes Service through the cluster DNS", func(t *testing.T) {
		available(t, n1, "coredns", 3*time.Minute)
		startResolver(t, n1, "500ms")
		resolverLatestAnswers(t, n1)
	})

	t.Run("upgrade node finds everything up to date", func(t *testing.T) {
		nodeCfg := filepath.Join(n1.Dir, "upgrade-node.yaml")
		writeFile(t, nodeCfg, upgradeConfiguration(""))
		r := runWithin(t, 5*time.Minute, n1, "kubeadm", "upgrade", "node", "--config", nodeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node1: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, comp := range selfHostedComponents {
			if !strings.Contains(r.Stdout, "[upgrade/self-hosted] "+comp+" runs the new version already") {
				t.Errorf("upgrade node did not find %s up to date:\n%s", comp, r.Stdout)
			}
		}
		if r := runWithin(t, 5*time.Minute, n2, "kubeadm", "upgrade", "node", "--config", nodeCfg); r.Code != 0 {
			t.Errorf("upgrade node on node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("/readyz: %q", out)
		}
	})

	t.Run("reset leaves the nodes as before", func(t *testing.T) {
		for _, n := range []*testbed.Node{n2, n1} {
			// The upgrade's backups are in /etc/kubernetes/tmp.
			if r := run(t, n, "kubeadm", "reset", "--force", "--cleanup-tmp-dir"); r.Code != 0 {
				t.Fatalf("reset %s: exit %d\n%s%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
			if d := diffDigests(before[n.Name], nodeFiles(t, n)); len(d) > 0 {
				t.Errorf("after reset, %s differs in: %v", n.Name, d)
			}
		}
	})
	t.Logf("the whole test: %v", time.Since(start).Round(time.Second))
}
