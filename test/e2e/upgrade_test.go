package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// controlPlaneComponents are the static Pods whose image follows the
// Kubernetes version (etcd's follows its own).
func controlPlaneComponents() []string {
	return []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
}

// TestUpgrade upgrades a cluster one minor release up as an administrator
// would: a cluster of three control-plane nodes and a worker, made by the
// kubeadm of testbed.UpgradeFromVersion (upstream's, as the cluster a user
// upgrades was made by the release before), "kubeadm upgrade plan", an
// "upgrade apply" whose new API server cannot start (it must roll back and
// leave the manifests as they were), a successful "upgrade apply" (etcd's
// minor version included), the first node's kubelet replaced, and "upgrade
// node" on the other control-plane nodes and on the worker, each followed
// by its kubelet. As upstream's, the addons (CoreDNS, kube-proxy) are only
// upgraded once no control-plane node is left at the old version, by the
// "upgrade node" of the last one. The cluster's endpoint is the test bed's
// load balancer in front of the three API servers. During all of it a
// Deployment on the worker is probed through its Service from the first
// node; the failed probes are counted (docs/performance.md).
func TestUpgrade(t *testing.T) {
	longTest(t, "25 minutes with the first build of the older release")
	from, to := requireUpgradeToolchains(t)
	oldV, newV := from.KubernetesVersion, to.KubernetesVersion
	c := manageCluster(t, from.UpgradeCluster(to, "e2eu", clusterStateDir("e2eu"), testWriter{t}))
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2", "node3", "node4")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3, n4 := nodes[0], nodes[1], nodes[2], nodes[3]
	// Registered after the cluster's cleanup, so it runs before teardown.
	t.Cleanup(func() {
		if t.Failed() {
			dumpControlPlane(t, n1, n2, n3)
		}
	})
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}

	// a. The cluster at the older version, made by that release's
	// kubeadm, and a key in etcd. Its endpoint is a load balancer in front
	// of the three API servers, as kubeadm's guide to highly available
	// clusters asks: with the first node's API server as the endpoint,
	// every node would lose the cluster while that one restarts (its
	// kubelets miss their lease renewals, their Pods leave the Services).
	var apiServers []netip.AddrPort
	for _, n := range []*testbed.Node{n1, n2, n3} {
		apiServers = append(apiServers, netip.AddrPortFrom(n.Addr(), 6443))
	}
	if err := c.ServeAPILoadBalancer(ctx, apiServers); err != nil {
		t.Fatal(err)
	}
	initCfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, initCfg, testbed.InitConfigBehind(n1, oldV, testbed.APILoadBalancerAddr, ""))
	r := run(t, n1, testbed.OldKubeadm, "init", "--config", initCfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm %s init: exit %d\n%s\n%s", oldV, r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	if jc.certificateKey == "" {
		t.Fatalf("init --upload-certs printed no certificate key:\n%s", r.Stdout)
	}
	for _, n := range []*testbed.Node{n2, n3} {
		r = run(t, n, testbed.OldKubeadm, "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n.Addr().String(), ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("control-plane join of %s: exit %d\n%s\n%s", n.Name, r.Code, r.Stdout, r.Stderr)
		}
	}
	r = run(t, n4, testbed.OldKubeadm, "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("worker join of node4: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	nodesReadyAt(t, n1, nodes, oldV)
	kubectl(t, n1, "-n", "default", "create", "configmap", "upgrade-canary", "--from-literal=k=v")
	checkAddons(t, n1, from)

	// b. A change the upgrade must carry to every kubelet's config.yaml.
	setKubeletConfigField(t, n1, "maxPods", "120")

	// c. The workload probed through its Service from node1 until the end.
	p := startProbe(t, n1, n4, to)
	t.Cleanup(func() { p.stop(t) })

	// d. The plan, as text and as JSON.
	t.Run("plan", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "upgrade", "plan", newV)
		if r.Code != 0 {
			t.Fatalf("upgrade plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		row := regexp.MustCompile(`(?m)^\s*kube-apiserver\s.*` + regexp.QuoteMeta(oldV) + `\s.*` + regexp.QuoteMeta(newV) + `\b`)
		if !row.MatchString(r.Stdout) {
			t.Errorf("no kube-apiserver line going from %s to %s in the plan:\n%s", oldV, newV, r.Stdout)
		}
		etcdRow := regexp.MustCompile(`(?m)^\s*etcd\s.*` + regexp.QuoteMeta(imageTag(imageRef(t, from, "etcd"))) + `\s+` + regexp.QuoteMeta(imageTag(imageRef(t, to, "etcd"))) + `\b`)
		if !etcdRow.MatchString(r.Stdout) {
			t.Errorf("no etcd line going from %s to %s in the plan:\n%s", imageRef(t, from, "etcd"), imageRef(t, to, "etcd"), r.Stdout)
		}
		if !strings.Contains(r.Stdout, "kubeadm upgrade apply "+newV) {
			t.Errorf("the plan does not show the command to apply it:\n%s", r.Stdout)
		}
		// The CreateJob health check ran its Job to completion on a node
		// and removed it. (Upstream's leaves it behind, its deletion
		// unfinished for minutes.)
		if !strings.Contains(r.Stdout, "[upgrade] Running cluster health checks") || strings.Contains(r.Stdout, "CreateJob") {
			t.Errorf("the plan's health checks did not pass cleanly:\n%s", r.Stdout)
		}
		if jobs := kubectl(t, n1, "-n", "kube-system", "get", "jobs", "-o", "name"); strings.TrimSpace(jobs) != "" {
			if otherKubeadm() {
				t.Logf("Jobs left in kube-system after the plan of %s: %s", os.Getenv(KubeadmEnv), jobs)
			} else {
				t.Errorf("Jobs left in kube-system after the plan: %s", jobs)
			}
		}

		r = run(t, n1, "kubeadm", "upgrade", "plan", newV, "-o", "json")
		if r.Code != 0 {
			t.Fatalf("upgrade plan -o json: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		plan := decodeUpgradePlan(t, r.Stdout)
		if plan.Kind != "UpgradePlan" || plan.APIVersion != "output.kubeadm.k8s.io/v1alpha3" {
			t.Errorf("plan is %s %s, want output.kubeadm.k8s.io/v1alpha3 UpgradePlan", plan.APIVersion, plan.Kind)
		}
		if len(plan.AvailableUpgrades) == 0 {
			t.Fatalf("no available upgrade in the plan:\n%s", r.Stdout)
		}
		want := componentPlan{Name: "kube-apiserver", CurrentVersion: oldV, NewVersion: newV}
		if !slices.ContainsFunc(plan.AvailableUpgrades[0].Components, func(cp componentPlan) bool {
			cp.NodeName = ""
			return cp == want
		}) {
			t.Errorf("availableUpgrades[0].components has no %+v: %+v", want, plan.AvailableUpgrades[0].Components)
		}
	})
	p.mark(t, "plan")

	manifests := n1.HostPath("/etc/kubernetes/manifests")
	kubeletConfig := n1.HostPath("/var/lib/kubelet/config.yaml")
	upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
	writeFile(t, upgradeCfg, upgradeConfiguration("3m"))
	apiserverRef := imageRef(t, to, "kube-apiserver")

	// e. An upgrade whose API server exits at start rolls back.
	before := treeDigest(t, manifests)
	t.Run("failed apply rolls back", func(t *testing.T) {
		crash := filepath.Join(n1.Dir, "crashing-kube-apiserver.tar")
		if err := testbed.WriteCrashArchive(crash, apiserverRef, to.Crash); err != nil {
			t.Fatal(err)
		}
		if err := n1.ImportImage(ctx, crash); err != nil {
			t.Fatal(err)
		}
		kubeletBefore := readFile(t, kubeletConfig)
		r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		t.Logf("the failing upgrade apply ended at %s after %v with exit %d: %s", time.Now().UTC().Format("15:04:05"), r.Took, r.Code, lastLine(r.Stderr))
		if otherKubeadm() {
			t.Logf("its output:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if r.Code == 0 {
			t.Fatalf("upgrade apply with a crashing API server image succeeded:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout+r.Stderr, "kube-apiserver") {
			t.Errorf("the failure does not name kube-apiserver:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if d := diffDigests(before, treeDigest(t, manifests)); len(d) > 0 {
			// Upstream's leaves etcd at the new version when a later
			// component fails; ours puts etcd back too.
			if otherKubeadm() && slices.Equal(d, []string{"etcd.yaml"}) {
				t.Logf("%s left etcd.yaml upgraded after the failed upgrade", os.Getenv(KubeadmEnv))
			} else {
				t.Errorf("the manifests differ from before the failed upgrade: %v", d)
			}
		}
		eventually(t, 4*time.Minute, "node1's API server answering after the rollback", func() error {
			return kubectlTry(t, n1, "--server", "https://"+netip.AddrPortFrom(n1.Addr(), 6443).String(), "get", "nodes").err
		})
		// The old control plane runs again, and every node is Ready once
		// its kubelet reaches the API server again (the next apply's
		// health check wants Ready control-plane nodes).
		checkControlPlaneAt(t, n1, n1, from)
		nodesReadyAt(t, n1, nodes, oldV)
		// The restarted controller manager and scheduler must lead again
		// before the next apply: its CreateJob health check gives its
		// Job 15 s, as upstream's does.
		controlPlaneSettled(t, n1)
		if got := clusterVersion(t, n1); got != oldV {
			t.Errorf("kubeadm-config says kubernetesVersion %q after a failed upgrade, want %s", got, oldV)
		}
		if readFile(t, kubeletConfig) != kubeletBefore {
			t.Errorf("a failed upgrade changed node1's /var/lib/kubelet/config.yaml")
		}
	})
	p.mark(t, "failed apply rolls back")
	if t.Failed() {
		t.FailNow()
	}

	// f. With the real image back, the same apply succeeds.
	t.Run("apply", func(t *testing.T) {
		good, err := to.Archive(apiserverRef)
		if err != nil {
			t.Fatal(err)
		}
		if err := n1.ImportImage(ctx, good); err != nil {
			t.Fatal(err)
		}
		// A dry run first: it succeeds, changes nothing, and leaves what it
		// would write in the folder KUBEADM_UPGRADE_DRYRUN_DIR names.
		dryBefore := treeDigest(t, manifests)
		const dryRunDir = "/root/upgrade-dryrun"
		r := runWithin(t, 5*time.Minute, n1, "env", "KUBEADM_UPGRADE_DRYRUN_DIR="+dryRunDir, "kubeadm", "upgrade", "apply", newV, "--dry-run", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply --dry-run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if d := diffDigests(dryBefore, treeDigest(t, manifests)); len(d) > 0 {
			t.Errorf("upgrade apply --dry-run changed the manifests: %v", d)
		}
		if out := mustRun(t, n1, "cat", dryRunDir+"/config.yaml"); !strings.Contains(out, "kind: KubeletConfiguration") {
			t.Errorf("the dry run's config.yaml:\n%s", out)
		}
		if !otherKubeadm() { // upstream's only prints the manifests
			if out := mustRun(t, n1, "cat", dryRunDir+"/kube-apiserver.yaml"); !strings.Contains(out, "image: "+apiserverRef) {
				t.Errorf("the dry run's kube-apiserver.yaml:\n%s", out)
			}
		}
		if got := clusterVersion(t, n1); got != oldV {
			t.Errorf("upgrade apply --dry-run changed kubeadm-config's kubernetesVersion to %q", got)
		}
		r = runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("upgrade apply took %v", r.Took)
		checkControlPlaneAt(t, n1, n1, to)
		if got := clusterVersion(t, n1); got != newV {
			t.Errorf("kubeadm-config says kubernetesVersion %q, want %s", got, newV)
		}
		checkMaxPods(t, n1, "120")
		if got := kubectl(t, n1, "-n", "default", "get", "configmap", "upgrade-canary", "-o", "jsonpath={.data.k}"); got != "v" {
			t.Errorf("the canary ConfigMap holds %q after the upgrade, want v", got)
		}
		checkBackup(t, n1, before)
		checkEtcdAt(t, n1, n1, imageRef(t, to, "etcd"))
		checkEtcdBackup(t, n1, imageRef(t, from, "etcd") != imageRef(t, to, "etcd"))
		// The addons wait until every control-plane node is upgraded.
		checkAddons(t, n1, from)
	})
	p.mark(t, "apply")
	if t.Failed() {
		t.FailNow()
	}

	// g. node1's kubelet follows.
	t.Run("kubelet of node1 replaced", func(t *testing.T) {
		replaceKubelet(t, n1, n1, to)
	})
	p.mark(t, "kubelet of node1")

	// h. upgrade node on the other control-plane nodes, each followed by
	// its kubelet; the last one upgrades the addons. Then the worker.
	// In node1's folder, which every node sees (host folders are visible).
	nodeCfg := filepath.Join(n1.Dir, "upgrade-node.yaml")
	writeFile(t, nodeCfg, upgradeConfiguration(""))
	for _, n := range []*testbed.Node{n2, n3} {
		t.Run("upgrade node on "+n.Name, func(t *testing.T) {
			r := runWithin(t, 10*time.Minute, n, "kubeadm", "upgrade", "node", "--config", nodeCfg)
			if r.Code != 0 {
				t.Fatalf("upgrade node on %s: exit %d\n%s\n%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
			t.Logf("upgrade node on %s took %v", n.Name, r.Took)
			checkControlPlaneAt(t, n1, n, to)
			checkEtcdAt(t, n1, n, imageRef(t, to, "etcd"))
			checkMaxPods(t, n, "120")
			replaceKubelet(t, n1, n, to)
		})
		p.mark(t, "upgrade node on "+n.Name)
		if t.Failed() {
			t.FailNow()
		}
	}
	// The last control-plane node upgraded: the addons followed.
	checkAddons(t, n1, to)

	t.Run("upgrade node on the worker", func(t *testing.T) {
		instance := n4.HostPath("/var/lib/kubelet/instance-config.yaml")
		flagsEnv := n4.HostPath("/var/lib/kubelet/kubeadm-flags.env")
		wantInstance := readFile(t, instance)
		r := runWithin(t, 10*time.Minute, n4, "kubeadm", "upgrade", "node", "--config", nodeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node4: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("upgrade node on node4 took %v", r.Took)
		checkMaxPods(t, n4, "120")
		if files := regularFiles(t, n4.HostPath("/etc/kubernetes/manifests")); len(files) > 0 {
			t.Errorf("upgrade node wrote static Pod manifests on a worker: %v", files)
		}
		if got := readFile(t, instance); got != wantInstance {
			t.Errorf("instance-config.yaml = %q, want %q as before", got, wantInstance)
		}
		if got := readFile(t, flagsEnv); strings.Contains(got, "container-runtime-endpoint") {
			t.Errorf("kubeadm-flags.env sets the CRI socket: %q", got)
		}
		replaceKubelet(t, n1, n4, to)
	})
	p.mark(t, "upgrade node on node4")
	failed, total := p.stop(t)
	t.Logf("Service probes during the upgrade: %d failed of %d", failed, total)
}

// replaceKubelet puts tc's kubelet on node n, restarts it and waits until
// the node is Ready at tc's version (read through api).
func replaceKubelet(t *testing.T, api, n *testbed.Node, tc *testbed.Toolchain) {
	t.Helper()
	if err := n.SetProgram("kubelet", filepath.Join(tc.Upstream, "kubelet")); err != nil {
		t.Fatal(err)
	}
	mustRun(t, n, "systemctl", "restart", "kubelet")
	eventually(t, 3*time.Minute, n.Name+" Ready with the kubelet of "+tc.KubernetesVersion, func() error {
		return expectOutput(kubectlTry(t, api, "get", "node", n.Name, "-o", nodeStateJSONPath), tc.KubernetesVersion+" True")
	})
}

// nodeStateJSONPath prints a node's kubelet version and Ready status.
// nodesReadyAt waits up to 3 minutes until each of nodes is Ready with
// a kubelet of version v, as n1's kubectl sees it.
func nodesReadyAt(t *testing.T, n1 *testbed.Node, nodes []*testbed.Node, v string) {
	t.Helper()
	for _, n := range nodes {
		eventually(t, 3*time.Minute, n.Name+" Ready at "+v, func() error {
			return expectOutput(kubectlTry(t, n1, "get", "node", n.Name, "-o", nodeStateJSONPath), v+" True")
		})
	}
}

// initWithWorker runs kubeadm init on n1 with the configuration file cfg
// (Kubernetes v) and joins n2 to it as a worker; it returns when init
// began.
func initWithWorker(t *testing.T, n1, n2 *testbed.Node, cfg, v string) time.Time {
	t.Helper()
	start := time.Now()
	r := run(t, n1, "kubeadm", "init", "--config", cfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init at %s: exit %d\n%s\n%s", v, r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	return start
}

const nodeStateJSONPath = `jsonpath={.status.nodeInfo.kubeletVersion}{" "}{.status.conditions[?(@.type=="Ready")].status}`

// mirrorPodJSONPath prints the image and readiness of a static Pod's
// running container, as its node's kubelet reports them.
const mirrorPodJSONPath = `jsonpath={.status.containerStatuses[0].image}{" "}{.status.containerStatuses[0].ready}`

// upgradeConfiguration is the UpgradeConfiguration of the test: images
// already imported, this machine's preflight findings ignored, and, when
// manifestsTimeout is set, that timeout for each static Pod to come back.
// forcedUpgradeConfiguration is upgradeConfiguration with apply's
// forceUpgrade set: a target a minor version below kubeadm's own.
func forcedUpgradeConfiguration(manifestsTimeout string) string {
	return strings.Replace(upgradeConfiguration(manifestsTimeout), "apply:\n", "apply:\n  forceUpgrade: true\n", 1)
}

func upgradeConfiguration(manifestsTimeout string) string {
	ignore := "[" + strings.Join(testbed.PreflightFindings, ", ") + "]"
	cfg := `apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
apply:
  imagePullPolicy: Never
  ignorePreflightErrors: ` + ignore + `
node:
  imagePullPolicy: Never
  ignorePreflightErrors: ` + ignore + `
`
	if manifestsTimeout != "" {
		cfg += "timeouts:\n  upgradeManifests: " + manifestsTimeout + "\n"
	}
	return cfg
}

// imageRef is the reference of the named image among those tc lists.
func imageRef(t *testing.T, tc *testbed.Toolchain, name string) string {
	t.Helper()
	for _, ref := range tc.Images {
		if strings.Contains(ref, "/"+name+":") {
			return ref
		}
	}
	t.Fatalf("no %s image among %v", name, tc.Images)
	return ""
}

// setKubeletConfigField sets a top-level field of the KubeletConfiguration
// kept in the kube-system/kubelet-config ConfigMap, as an administrator
// editing it would.
func setKubeletConfigField(t *testing.T, n *testbed.Node, field, value string) {
	t.Helper()
	var cm map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubelet-config", "-o", "json")), &cm); err != nil {
		t.Fatalf("reading the kubelet-config ConfigMap: %v", err)
	}
	data, _ := cm["data"].(map[string]any)
	doc, _ := data["kubelet"].(string)
	if doc == "" {
		t.Fatalf("the kubelet-config ConfigMap has no kubelet key: %v", cm["data"])
	}
	line := field + ": " + value
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:.*$`)
	if re.MatchString(doc) {
		doc = re.ReplaceAllLiteralString(doc, line)
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n" + line + "\n"
	}
	data["kubelet"] = doc
	out, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(n.Dir, "kubelet-config.json")
	writeFile(t, file, string(out))
	kubectl(t, n, "replace", "-f", file)
}

// checkMaxPods checks the maxPods of a node's /var/lib/kubelet/config.yaml.
func checkMaxPods(t *testing.T, n *testbed.Node, want string) {
	t.Helper()
	cfg := readFile(t, n.HostPath("/var/lib/kubelet/config.yaml"))
	if !regexp.MustCompile(`(?m)^maxPods: ` + regexp.QuoteMeta(want) + `$`).MatchString(cfg) {
		t.Errorf("%s's /var/lib/kubelet/config.yaml does not say maxPods: %s:\n%s", n.Name, want, cfg)
	}
}

// checkControlPlaneAt checks that the control-plane static Pods of node n
// are at tc's version: in their manifests, and in the containers its
// kubelet runs (their mirror Pods, read through api).
func checkControlPlaneAt(t *testing.T, api, n *testbed.Node, tc *testbed.Toolchain) {
	t.Helper()
	for _, comp := range controlPlaneComponents() {
		want := imageRef(t, tc, comp)
		if got := manifestImage(t, n.HostPath("/etc/kubernetes/manifests/"+comp+".yaml")); got != want {
			t.Errorf("%s's %s manifest has image %q, want %s", n.Name, comp, got, want)
		}
		eventually(t, 3*time.Minute, comp+" of "+n.Name+" running "+want, func() error {
			return expectOutput(kubectlTry(t, api, "-n", "kube-system", "get", "pod", comp+"-"+n.Name, "-o", mirrorPodJSONPath), want+" true")
		})
	}
}

// checkAddons checks that the kube-proxy DaemonSet and the CoreDNS
// Deployment have the images tc lists and that their Pods run them.
func checkAddons(t *testing.T, api *testbed.Node, tc *testbed.Toolchain) {
	t.Helper()
	checkAddon(t, api, tc, "daemonset", "kube-proxy", "kube-proxy")
	checkAddon(t, api, tc, "deployment", "coredns", "coredns")
}

// checkKubeProxy is checkAddons for kube-proxy alone.
func checkKubeProxy(t *testing.T, api *testbed.Node, tc *testbed.Toolchain) {
	t.Helper()
	checkAddon(t, api, tc, "daemonset", "kube-proxy", "kube-proxy")
}

// checkAddon checks the image of an addon's workload (kind/name in
// kube-system) and waits for its rollout.
func checkAddon(t *testing.T, api *testbed.Node, tc *testbed.Toolchain, kind, name, image string) {
	t.Helper()
	want := imageRef(t, tc, image)
	if got := kubectl(t, api, "-n", "kube-system", "get", kind, name, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != want {
		t.Errorf("%s %s image %q, want %s", kind, name, got, want)
	}
	kubectl(t, api, "-n", "kube-system", "rollout", "status", kind+"/"+name, "--timeout=3m")
}

// imageTag is the tag of an image reference.
func imageTag(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }

// manifestImage returns the image of a static Pod manifest's container.
func manifestImage(t *testing.T, path string) string {
	t.Helper()
	var pod struct {
		Spec struct {
			Containers []struct {
				Image string `json:"image"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &pod); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if len(pod.Spec.Containers) == 0 {
		t.Fatalf("%s has no container", path)
	}
	return pod.Spec.Containers[0].Image
}

// clusterVersion is the kubernetesVersion of the ClusterConfiguration in
// the kubeadm-config ConfigMap.
func clusterVersion(t *testing.T, n *testbed.Node) string {
	t.Helper()
	doc := kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
	var cfg struct {
		KubernetesVersion string `json:"kubernetesVersion"`
	}
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatalf("reading the ClusterConfiguration of kubeadm-config: %v\n%s", err, doc)
	}
	return cfg.KubernetesVersion
}

// checkBackup checks that a kubeadm-backup-manifests-* folder of n holds
// the manifests of the control-plane components exactly as they were
// before the upgrade (before: treeDigest of the manifests folder).
func checkBackup(t *testing.T, n *testbed.Node, before map[string]string) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(n.HostPath("/etc/kubernetes/tmp"), "kubeadm-backup-manifests-*"))
	if err != nil || len(dirs) == 0 {
		t.Errorf("no kubeadm-backup-manifests-* folder in %s's /etc/kubernetes/tmp (%v)", n.Name, err)
		return
	}
	for _, dir := range dirs {
		backup := treeDigest(t, dir)
		ok := true
		for _, comp := range controlPlaneComponents() {
			if backup[comp+".yaml"] == "" || backup[comp+".yaml"] != before[comp+".yaml"] {
				ok = false
			}
		}
		if ok {
			return
		}
	}
	t.Errorf("none of %v holds the manifests of %v as they were before the upgrade", dirs, controlPlaneComponents())
}

// runEtcdTag makes node n's etcd member run its image under the tag to
// (a copy of tag from) and waits until it is ready again and the API
// server answers.
func runEtcdTag(t *testing.T, n *testbed.Node, manifest, from, to string) {
	t.Helper()
	mustRun(t, n, "ctr", "-n", "k8s.io", "-a", "/run/containerd/containerd.sock", "images", "tag", "--force",
		"registry.k8s.io/etcd:"+from, "registry.k8s.io/etcd:"+to)
	data := strings.Replace(readFile(t, manifest), "/etcd:"+from, "/etcd:"+to, 1)
	// Written beside (a dot file the kubelet ignores) and renamed in.
	tmp := filepath.Join(filepath.Dir(manifest), ".etcd.yaml.tmp")
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, manifest); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, n.Name+"'s etcd running "+to, func() error {
		return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "pod", "etcd-"+n.Name, "-o",
			"jsonpath={.spec.containers[0].image} {.status.containerStatuses[0].ready}"), "registry.k8s.io/etcd:"+to+" true")
	})
}

// checkEtcdBackup wants the etcd backup an upgrade of etcd leaves: a copy
// of the data folder and (ours only, beyond upstream) a snapshot.
func checkEtcdBackup(t *testing.T, n *testbed.Node, etcdChanged bool) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(n.HostPath("/etc/kubernetes/tmp"), "kubeadm-backup-etcd-*"))
	// Upstream's failed apply, which left etcd as it was, had already
	// backed up etcd's data; ours backs it up only when etcd changes,
	// which in a minor upgrade the failed apply did too (etcd goes
	// first).
	if err != nil || len(dirs) == 0 || len(dirs) > 1 && !otherKubeadm() && !etcdChanged {
		t.Errorf("want one kubeadm-backup-etcd-* folder in %s's /etc/kubernetes/tmp, found %v (%v)", n.Name, dirs, err)
		return
	}
	dir := dirs[len(dirs)-1] // the newest: the names end in the time
	if _, err := os.Stat(filepath.Join(dir, "etcd", "member", "snap", "db")); err != nil {
		t.Errorf("the etcd backup holds no copy of the data folder: %v", err)
	}
	if otherKubeadm() {
		return // upstream takes no snapshot
	}
	if fi, err := os.Stat(filepath.Join(dir, "snapshot.db")); err != nil || fi.Size() == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the etcd backup holds no snapshot (mode 0600): %v %v", fi, err)
	}
}

// componentPlan is one row of an UpgradePlan.
type componentPlan struct {
	Name           string `json:"name"`
	CurrentVersion string `json:"currentVersion"`
	NewVersion     string `json:"newVersion"`
	NodeName       string `json:"nodeName"`
}

// upgradePlan is the part of output.kubeadm.k8s.io UpgradePlan the test
// reads.
type upgradePlan struct {
	Kind              string `json:"kind"`
	APIVersion        string `json:"apiVersion"`
	AvailableUpgrades []struct {
		Description string          `json:"description"`
		Components  []componentPlan `json:"components"`
	} `json:"availableUpgrades"`
}

// decodeUpgradePlan reads the JSON object that "upgrade plan -o json"
// prints; progress lines before it are tolerated and logged.
func decodeUpgradePlan(t *testing.T, out string) upgradePlan {
	t.Helper()
	start := 0
	if !strings.HasPrefix(out, "{") {
		i := strings.Index(out, "\n{")
		if i < 0 {
			t.Fatalf("no JSON object in the output:\n%s", out)
		}
		start = i + 1
		t.Logf("text before the JSON plan:\n%s", out[:start])
	}
	var plan upgradePlan
	if err := json.NewDecoder(strings.NewReader(out[start:])).Decode(&plan); err != nil {
		t.Fatalf("decoding the plan: %v\n%s", err, out)
	}
	return plan
}

// regularFiles lists the files (not folders) under root, none if it does
// not exist.
func regularFiles(t *testing.T, root string) []string {
	t.Helper()
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var files []string
	for p, digest := range treeDigest(t, root) {
		if strings.HasPrefix(digest, "-") {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	return files
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dumpControlPlane logs what helps to understand a failed upgrade: the
// Pods as the API server sees them (if it answers) and the end of the
// control-plane containers' logs of the given nodes.
func dumpControlPlane(t *testing.T, nodes ...*testbed.Node) {
	t.Helper()
	r := kubectlTry(t, nodes[0], "get", "pods", "-A", "-o", "wide")
	t.Logf("---- pods:\n%s%v", r.out, r.err)
	for _, n := range nodes {
		for _, comp := range append([]string{"etcd"}, controlPlaneComponents()...) {
			logs, _ := filepath.Glob(filepath.Join(n.HostPath("/var/log/pods"), "kube-system_"+comp+"-"+n.Name+"_*", comp, "*.log"))
			slices.Sort(logs)
			if len(logs) > 2 {
				logs = logs[len(logs)-2:]
			}
			for _, l := range logs {
				t.Logf("---- end of %s of %s (%s):\n%s", comp, n.Name, filepath.Base(l), tail(l, 20))
			}
		}
	}
}
