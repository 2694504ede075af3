package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// hostProcessPrograms are the control plane's programs, which the user
// installs on a node of a control plane of host processes.
var hostProcessPrograms = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// TestHostProcessControlPlane makes a cluster of a control-plane node and
// a worker whose control plane runs as systemd units (the
// HostProcessControlPlane feature gate), the programs installed in the
// node's /usr/local/sbin as a user would: the nodes are Ready, a second
// control-plane node joins with units of its own and its etcd member
// votes, the units run and the components are healthy with no static Pod
// of theirs, a Pod
// resolves the kubernetes Service's name through the cluster's DNS, a
// kube-apiserver killed with SIGKILL is brought back by the init system,
// and reset leaves both nodes' folders (units included) as they were.
func TestHostProcessControlPlane(t *testing.T) {
	if otherKubeadm() {
		t.Skip("a control plane of host processes is ours only")
	}
	tc := requireToolchain(t)
	resolveArchive, err := tc.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "e2ehp")
	c.Archives = append(slices.Clone(c.Archives), resolveArchive)
	for _, p := range hostProcessPrograms {
		c.Programs[p] = tc.UpstreamBinary(p)
	}
	nodes, err := c.Up(context.Background(), "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	before := map[string]map[string]string{}
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
		before[n.Name] = nodeFiles(t, n)
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, testbed.KubernetesVersion, ""),
		"networking:\n", "featureGates:\n  HostProcessControlPlane: true\nnetworking:\n", 1))
	start := time.Now()
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("init: %v", r.Took.Round(time.Millisecond))
	for _, l := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(l, " is healthy after ") {
			t.Log(l)
		}
	}
	for _, want := range []string{
		"[etcd] Creating the systemd unit for local etcd in \"/etc/systemd/system\"\n",
		"[control-plane] Creating the systemd unit for \"kube-apiserver\"\n",
		"[wait-control-plane] Waiting for systemd to run the control plane from the units in \"/etc/systemd/system\"\n",
		"Your Kubernetes control-plane has initialized successfully!",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("init did not print %q:\n%s", want, r.Stdout)
		}
	}
	jc := parseJoinCommand(t, r.Stdout)
	mustRun(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	nodeReady(t, n1, "node1", 90*time.Second)
	nodeReady(t, n1, "node2", 90*time.Second)
	t.Logf("init, join and both nodes Ready: %v", time.Since(start).Round(time.Second))

	t.Run("a second control-plane node joins with units of its own", func(t *testing.T) {
		r := run(t, n3, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n3.Addr().String(), ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("control-plane join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("control-plane join: %v", r.Took.Round(time.Millisecond))
		nodeReady(t, n1, "node3", 90*time.Second)
		for _, p := range hostProcessPrograms {
			if got := strings.TrimSpace(mustRun(t, n3, "systemctl", "is-active", p)); got != "active" {
				t.Errorf("%s.service of node3 is %q", p, got)
			}
		}
		if entries, err := os.ReadDir(n3.HostPath("/etc/kubernetes/manifests")); len(entries) > 0 || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("node3 has static Pod manifests: %v, %v", entries, err)
		}
		members := mustRun(t, n3, "etcdctl", "--endpoints=https://127.0.0.1:2379", "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
			"--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key", "member", "list")
		if strings.Count(members, ", started, ") != 2 || strings.Contains(members, "true") {
			t.Errorf("etcd members (two started voters wanted):\n%s", members)
		}
	})

	t.Run("the control plane runs as units", func(t *testing.T) {
		for _, p := range hostProcessPrograms {
			if got := strings.TrimSpace(mustRun(t, n1, "systemctl", "is-active", p)); got != "active" {
				t.Errorf("%s.service is %q", p, got)
			}
			if got := run(t, n1, "systemctl", "is-enabled", p).Stdout; strings.TrimSpace(got) != "enabled" {
				t.Errorf("%s.service is not enabled: %q", p, got)
			}
		}
		unit := mustRun(t, n1, "cat", "/etc/systemd/system/kube-apiserver.service")
		for _, want := range []string{"ExecStart=/usr/local/sbin/kube-apiserver \\\n", "--advertise-address=" + n1.Addr().String(), "Restart=always\n"} {
			if !strings.Contains(unit, want) {
				t.Errorf("the API server's unit lacks %q:\n%s", want, unit)
			}
		}
		if out := mustRun(t, n1, "ls", "/etc/kubernetes/manifests"); strings.TrimSpace(out) != "" {
			t.Errorf("static Pod manifests were written: %s", out)
		}
		if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("/readyz: %q", out)
		}
		pods := kubectl(t, n1, "-n", "kube-system", "get", "pods", "-o", "name")
		for _, p := range hostProcessPrograms {
			if strings.Contains(pods, "pod/"+p+"-") {
				t.Errorf("a %s Pod runs:\n%s", p, pods)
			}
		}
		cc := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}")
		if !strings.Contains(cc, "featureGates:\n  HostProcessControlPlane: true\n") {
			t.Errorf("kubeadm-config does not keep the choice:\n%s", cc)
		}
	})

	t.Run("a Pod resolves the kubernetes Service through the cluster DNS", func(t *testing.T) {
		available(t, n1, "coredns", 3*time.Minute)
		startResolver(t, n1, "500ms")
		resolverAnswers(t, n1)
	})

	t.Run("a killed API server comes back by itself", func(t *testing.T) {
		pid := mainPID(t, n1, "kube-apiserver")
		mustRun(t, n1, "kill", "-9", pid)
		killed := time.Now()
		eventually(t, 2*time.Minute, "a new kube-apiserver", func() error {
			if p := mainPID(t, n1, "kube-apiserver"); p == pid || p == "0" {
				return fmt.Errorf("MainPID %s", p)
			}
			return expectOutput(kubectlTry(t, n1, "get", "--raw", "/readyz"), "ok")
		})
		t.Logf("the API server was ready again %v after kill -9", time.Since(killed).Round(100*time.Millisecond))
		// The upgrade tells a crash loop by systemd's count.
		if out := mustRun(t, n1, "systemctl", "show", "--property=NRestarts", "kube-apiserver"); !strings.Contains(out, "NRestarts=1\n") {
			t.Errorf("systemctl show after one kill: %q, want NRestarts=1", out)
		}
	})

	t.Run("reset leaves the nodes as before", func(t *testing.T) {
		for _, n := range []*testbed.Node{n3, n2, n1} {
			if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
				t.Fatalf("reset %s: exit %d\n%s%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
			if d := diffDigests(before[n.Name], nodeFiles(t, n)); len(d) > 0 {
				t.Errorf("after reset, %s differs in: %v", n.Name, d)
			}
		}
		for _, n := range []*testbed.Node{n3, n1} {
			for _, p := range hostProcessPrograms {
				if r := run(t, n, "systemctl", "status", p); r.Code != 4 {
					t.Errorf("after reset, systemctl status %s on %s: exit %d, want 4 (no such unit)\n%s", p, n.Name, r.Code, r.Stdout)
				}
			}
			if out := mustRun(t, n, "ps", "-e", "-o", "comm="); strings.Contains(out, "kube-apiserver") || strings.Contains(out, "etcd\n") {
				t.Errorf("control-plane processes still run on %s after reset:\n%s", n.Name, out)
			}
		}
	})
}

// mainPID is the process ID of a service on a node, as its stand-in
// systemctl tells it ("0" when it does not run).
func mainPID(t *testing.T, n *testbed.Node, service string) string {
	t.Helper()
	out := mustRun(t, n, "systemctl", "show", "--property=MainPID", service)
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "MainPID="); ok {
			return v
		}
	}
	t.Fatalf("systemctl show %s: no MainPID in %q", service, out)
	return ""
}

// hostProcessUpgrade is a cluster of host processes ready for an
// upgrade, as an administrator who keeps both versions' programs side by
// side has it: a control-plane node and a worker made by our kubeadm at
// the older release with the HostProcessControlPlane feature gate, its
// programs installed under their bare names in the node's /usr/local/sbin
// and the target's under versioned names (kube-apiserver-v1.37.2,
// etcd-v3.7.0). When etcd's version changes, etcd starts at the older
// one (its imageTag set at init, dropped before the upgrade, so that the
// upgrade moves etcd too); when it does not, no versioned etcd is
// installed and the unit keeps the bare one.
type hostProcessUpgrade struct {
	to                           *testbed.Toolchain
	oldV, newV, oldEtcd, newEtcd string
	nodes                        []*testbed.Node
	n1, n2                       *testbed.Node
	versioned                    map[string]string            // program → the path the upgraded unit runs
	before                       map[string]map[string]string // node → nodeFiles before init
	unitDir, upgradeCfg          string
	start                        time.Time
}

// newHostProcessUpgrade is hostProcessUpgrade one minor release up
// (testbed.UpgradeFromVersion with etcd testbed.UpgradeFromEtcdVersion
// to testbed.KubernetesVersion with etcd testbed.EtcdVersion).
func newHostProcessUpgrade(t *testing.T, name string) *hostProcessUpgrade {
	t.Helper()
	if otherKubeadm() {
		t.Skip("a control plane of host processes is ours only")
	}
	// CI does not build the older release (see .ci/run).
	longTest(t, "3 minutes, and 15 more for the first build of the older release")
	from, to := requireUpgradeToolchains(t)
	return setUpHostProcessUpgrade(t, name, from, to, testbed.UpgradeFromEtcdVersion, testbed.EtcdVersion, nil)
}

// setUpHostProcessUpgrade makes the cluster of hostProcessUpgrade at
// from's version with etcd oldEtcd, for an upgrade to to's version with
// etcd newEtcd (the etcd our kubeadm chooses for it). Its nodes also hold
// the resolver image (testbed.ResolveRef) and the images of archives.
func setUpHostProcessUpgrade(t *testing.T, name string, from, to *testbed.Toolchain, oldEtcd, newEtcd string, archives []string) *hostProcessUpgrade {
	t.Helper()
	oldV, newV := from.KubernetesVersion, to.KubernetesVersion
	oldEtcd, newEtcd = strings.TrimPrefix(oldEtcd, "v"), strings.TrimPrefix(newEtcd, "v")
	resolveArchive, err := to.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := manageCluster(t, from.UpgradeCluster(to, name, clusterStateDir(name), testWriter{t}))
	c.Archives = append(append(slices.Clone(c.Archives), archives...), resolveArchive)
	versioned := map[string]string{}
	for _, p := range hostProcessPrograms {
		c.Programs[p] = from.UpstreamBinary(p)
		versioned[p] = "/usr/local/sbin/" + p
		if p == "etcd" && oldEtcd == newEtcd {
			continue // the target's etcd is the one installed
		}
		name := p + "-" + newV
		if p == "etcd" {
			name = p + "-v" + newEtcd
		}
		c.Programs[name] = to.UpstreamBinary(p)
		versioned[p] = "/usr/local/sbin/" + name
	}
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
	gates := "featureGates:\n  HostProcessControlPlane: true\n"
	if oldEtcd != newEtcd {
		gates += "etcd:\n  local:\n    imageTag: " + oldEtcd + "-0\n"
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, oldV, ""), "networking:\n", gates+"networking:\n", 1))
	start := initWithWorker(t, n1, n2, cfg, oldV)
	nodesReadyAt(t, n1, nodes, oldV)
	t.Logf("a cluster at %s with etcd %s, its control plane as units: %v", oldV, oldEtcd, time.Since(start).Round(time.Second))
	if oldEtcd != newEtcd {
		// The administrator lets kubeadm choose etcd's version again.
		editClusterConfiguration(t, n1, func(doc string) string {
			return regexp.MustCompile(`(?m)^\s+imageTag: `+regexp.QuoteMeta(oldEtcd)+`-0\n`).ReplaceAllString(doc, "")
		})
	}
	upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
	writeFile(t, upgradeCfg, upgradeConfiguration("2m"))
	return &hostProcessUpgrade{
		to: to, oldV: oldV, newV: newV, oldEtcd: oldEtcd, newEtcd: newEtcd,
		nodes: nodes, n1: n1, n2: n2, versioned: versioned, before: before,
		unitDir: n1.HostPath("/etc/systemd/system"), upgradeCfg: upgradeCfg, start: start,
	}
}

// etcdStatus is "etcdctl endpoint status" of the node's etcd member.
func etcdStatus(t *testing.T, n *testbed.Node) string {
	t.Helper()
	return mustRun(t, n, "etcdctl", "--endpoints=https://127.0.0.1:2379", "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
		"--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt", "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key", "endpoint", "status")
}

// TestHostProcessUpgrade upgrades a cluster of host processes
// (hostProcessUpgrade). A dry run and "upgrade diff" show the units and
// change nothing; "upgrade apply" rewrites and restarts the units, etcd
// first, onto the versioned programs and upgrades kube-proxy; a second
// run ("upgrade node" on the same node) restarts nothing; "upgrade node"
// on the worker and the new kubelets follow.
func TestHostProcessUpgrade(t *testing.T) {
	u := newHostProcessUpgrade(t, "e2ehpu")
	to, newV, newEtcd := u.to, u.newV, u.newEtcd
	nodes, n1, n2, versioned, unitDir, upgradeCfg, start := u.nodes, u.n1, u.n2, u.versioned, u.unitDir, u.upgradeCfg, u.start

	t.Run("dry run", func(t *testing.T) {
		before := treeDigest(t, unitDir)
		r := runWithin(t, 5*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--dry-run", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply --dry-run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, want := range []string{
			"[dryrun] Would write file \"/etc/systemd/system/etcd.service\" with content:\n",
			"[dryrun] Would write file \"/etc/systemd/system/kube-apiserver.service\" with content:\n",
			"ExecStart=" + versioned["kube-apiserver"] + " \\\n",
			"ExecStart=" + versioned["etcd"] + " \\\n",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the dry run does not show %q:\n%s", want, r.Stdout)
			}
		}
		r = runWithin(t, 5*time.Minute, n1, "kubeadm", "upgrade", "diff", newV, "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade diff: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, p := range hostProcessPrograms[1:] {
			for _, want := range []string{"--- /etc/systemd/system/" + p + ".service\n+++ new unit\n", "+ExecStart=" + versioned[p] + " \\\n"} {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("upgrade diff does not show %q:\n%s", want, r.Stdout)
				}
			}
		}
		if d := diffDigests(before, treeDigest(t, unitDir)); len(d) > 0 {
			t.Errorf("the dry run or the diff changed the units: %v", d)
		}
	})

	t.Run("apply", func(t *testing.T) {
		r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("upgrade apply took %v", r.Took.Round(100*time.Millisecond))
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(l, "upgraded and healthy after") || strings.Contains(l, "serves again after") {
				t.Log(l)
			}
		}
		order := []int{}
		for _, p := range hostProcessPrograms {
			order = append(order, strings.Index(r.Stdout, "[upgrade/units] \""+p+"\" upgraded and healthy after"))
		}
		if !slices.IsSorted(order) || order[0] < 0 {
			t.Errorf("the units were not upgraded in the order etcd, API server, controller manager, scheduler (%v):\n%s", order, r.Stdout)
		}
		if !strings.Contains(r.Stdout, "[upgrade] SUCCESS! A control plane node of your cluster was upgraded to \""+newV+"\".") {
			t.Errorf("no success line:\n%s", r.Stdout)
		}
		for _, p := range hostProcessPrograms {
			unit := readFile(t, filepath.Join(unitDir, p+".service"))
			if !strings.Contains(unit, "ExecStart="+versioned[p]+" \\\n") {
				t.Errorf("the unit of %s does not run %s:\n%s", p, versioned[p], unit)
			}
			if got := strings.TrimSpace(mustRun(t, n1, "systemctl", "is-active", p)); got != "active" {
				t.Errorf("%s.service is %q", p, got)
			}
		}
		if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+newV+`"`) {
			t.Errorf("the API server is not at %s:\n%s", newV, out)
		}
		if status := etcdStatus(t, n1); !strings.Contains(status, ", "+newEtcd+", ") {
			t.Errorf("etcd is not at %s: %s", newEtcd, status)
		}
		checkKubeProxy(t, n1, to)
	})
	if t.Failed() {
		t.FailNow()
	}

	nodeCfg := filepath.Join(n1.Dir, "upgrade-node.yaml")
	writeFile(t, nodeCfg, upgradeConfiguration(""))
	t.Run("a second run restarts nothing", func(t *testing.T) {
		pids := map[string]string{}
		for _, p := range hostProcessPrograms {
			pids[p] = mainPID(t, n1, p)
		}
		before := treeDigest(t, unitDir)
		r := runWithin(t, 5*time.Minute, n1, "kubeadm", "upgrade", "node", "--config", nodeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node1: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, p := range hostProcessPrograms[1:] {
			if !strings.Contains(r.Stdout, "[upgrade/units] The unit of \""+p+"\" is already up to date and its process runs it") {
				t.Errorf("upgrade node did not find %s up to date:\n%s", p, r.Stdout)
			}
		}
		if !strings.Contains(r.Stdout, "[upgrade/etcd] etcd runs "+newEtcd+" and the target is "+newEtcd+": etcd is not upgraded") {
			t.Errorf("upgrade node did not find etcd up to date:\n%s", r.Stdout)
		}
		for _, p := range hostProcessPrograms {
			if got := mainPID(t, n1, p); got != pids[p] {
				t.Errorf("%s was restarted: MainPID %s, then %s", p, pids[p], got)
			}
		}
		if d := diffDigests(before, treeDigest(t, unitDir)); len(d) > 0 {
			t.Errorf("the second run changed the units: %v", d)
		}
	})

	t.Run("the worker and the kubelets follow", func(t *testing.T) {
		r := runWithin(t, 5*time.Minute, n2, "kubeadm", "upgrade", "node", "--config", nodeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, n := range nodes {
			replaceKubelet(t, n1, n, to)
		}
		if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("/readyz: %q", out)
		}
	})
	t.Logf("the whole test: %v", time.Since(start).Round(time.Second))
}

// TestHostProcessUpgradeRollback upgrades a cluster of host processes
// (hostProcessUpgrade) whose new API server program answers --version
// and exits a second after every start, once etcd's own upgrade
// succeeded: the upgrade puts back the units of etcd and the API server,
// and etcd's data too, as etcd is its cluster's only member and the
// previous minor version does not start on the data the new one
// converted, then restarts the node's other units and its kubelet, which
// hold state newer than the restored data, and waits until the controller
// manager and the scheduler lead again. Objects written before the
// upgrade are read after it, and an apply run at once after the rollback,
// with the API server program fixed, succeeds (its preflight's Job runs
// only once a controller manager and a scheduler lead).
func TestHostProcessUpgradeRollback(t *testing.T) {
	u := newHostProcessUpgrade(t, "e2ehpr")
	to, oldV, newV, oldEtcd := u.to, u.oldV, u.newV, u.oldEtcd
	n1, unitDir, upgradeCfg := u.n1, u.unitDir, u.upgradeCfg
	t.Run("a failed apply rolls back etcd's data", func(t *testing.T) {
		kubectl(t, n1, "-n", "default", "create", "configmap", "before-the-failed-upgrade", "--from-literal=written=before")
		before := treeDigest(t, unitDir)
		script := filepath.Join(n1.Dir, "kube-apiserver-exits")
		writeFile(t, script, "#!/bin/sh\nif [ \"$1\" = --version ]; then exec "+to.UpstreamBinary("kube-apiserver")+" --version; fi\nsleep 1\necho this kube-apiserver exits >&2\nexit 1\n")
		if err := os.Chmod(script, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := n1.SetProgram("kube-apiserver-"+newV, script); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := n1.SetProgram("kube-apiserver-"+newV, to.UpstreamBinary("kube-apiserver")); err != nil {
				t.Fatal(err)
			}
		}()
		r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		t.Logf("the failing upgrade apply ended after %v with exit %d: %s", r.Took.Round(100*time.Millisecond), r.Code, lastLine(r.Stderr))
		if r.Code == 0 {
			t.Fatalf("upgrade apply with an API server that exits succeeded:\n%s\n%s", r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "upgrading kube-apiserver: ") || !strings.Contains(r.Stderr, "the previous units were restored") {
			t.Errorf("the failure does not say that kube-apiserver failed and the units were restored:\n%s\n%s", r.Stdout, r.Stderr)
		}
		for _, want := range []string{"\"etcd\" upgraded and healthy after", "Restoring the previous unit of \"kube-apiserver\"", "Restoring the previous unit of \"etcd\"",
			"[upgrade/etcd] etcd's data was put back from \"/etc/kubernetes/tmp/kubeadm-backup-etcd-", "\"etcd\" runs its previous unit again", "\"kube-apiserver\" runs its previous unit again",
			"[upgrade/units] Restarting kube-controller-manager.service, which holds state newer than etcd's restored data",
			"[upgrade/units] Restarting kube-scheduler.service, which holds state newer than etcd's restored data",
			"[upgrade/units] Restarting the kubelet, which holds state newer than etcd's restored data",
			"[upgrade/units] kube-controller-manager leads (", "[upgrade/units] kube-scheduler leads ("} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the upgrade did not print %q:\n%s", want, r.Stdout)
			}
		}
		if d := diffDigests(before, treeDigest(t, unitDir)); len(d) > 0 {
			t.Errorf("the units differ from before the failed upgrade: %v", d)
		}
		if status := etcdStatus(t, n1); !strings.Contains(status, ", "+oldEtcd+", ") {
			t.Errorf("etcd is not back at %s: %s", oldEtcd, status)
		}
		if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+oldV+`"`) {
			t.Errorf("the API server is not back at %s:\n%s", oldV, out)
		}
		if out := kubectl(t, n1, "-n", "default", "get", "configmap", "before-the-failed-upgrade", "-o", "jsonpath={.data.written}"); out != "before" {
			t.Errorf("the ConfigMap written before the upgrade reads %q after the rollback", out)
		}
		if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("/readyz after the rollback: %q", out)
		}
		// /var/lib/etcd is a mount point on the test bed: the data set
		// aside is beside it, in the machine's /var/lib.
		defer run(t, n1, "sh", "-c", "rm -rf /var/lib/etcd.failed-*")
		if out := mustRun(t, n1, "sh", "-c", "ls -d /var/lib/etcd.failed-*"); strings.TrimSpace(out) == "" {
			t.Error("the data the new etcd wrote was not kept aside")
		}
		for _, l := range regexp.MustCompile(`(?m)^.*(Waiting up to .* to lead|leads \().*$`).FindAllString(r.Stdout, -1) {
			t.Log(l)
		}
	})
	t.Run("an apply right after the rollback succeeds", func(t *testing.T) {
		t.Logf("the Leases after the rollback:\n%s", kubectl(t, n1, "-n", "kube-system", "get", "leases", "kube-controller-manager", "kube-scheduler",
			"-o", "custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,ACQUIRED:.spec.acquireTime,RENEWED:.spec.renewTime,TRANSITIONS:.spec.leaseTransitions"))
		for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
			t.Logf("what %s logged about its Lease:\n%s", c, leaseLog(t, n1, c))
		}
		r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
		t.Logf("the upgrade apply after the rollback ended after %v with exit %d", r.Took.Round(100*time.Millisecond), r.Code)
		if r.Code != 0 {
			t.Fatalf("upgrade apply right after the rollback: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		// The upgraded controller manager and scheduler lead before
		// the apply goes on.
		for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
			if !strings.Contains(r.Stdout, "[upgrade/units] "+c+" leads (") {
				t.Errorf("the apply did not wait for %s to lead:\n%s", c, r.Stdout)
			}
		}
		for _, l := range regexp.MustCompile(`(?m)^.*(upgraded and healthy after|leads \().*$`).FindAllString(r.Stdout, -1) {
			t.Log(l)
		}
		if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+newV+`"`) {
			t.Errorf("the API server is not at %s after the apply:\n%s", newV, out)
		}
	})
	t.Logf("the whole test: %v", time.Since(u.start).Round(time.Second))
}

// leaseLog is what component's log (as the test bed keeps it) says about
// leader election: its launches and its Lease, the last lines.
func leaseLog(t *testing.T, n *testbed.Node, component string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.LogDir(), component+".service"))
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "==== ") || strings.Contains(l, "lease") {
			lines = append(lines, l[:min(len(l), 200)])
		}
	}
	return strings.Join(lines[max(0, len(lines)-12):], "\n")
}

// editClusterConfiguration changes the ClusterConfiguration kept in the
// kube-system/kubeadm-config ConfigMap, as an administrator editing it
// would.
func editClusterConfiguration(t *testing.T, n *testbed.Node, edit func(string) string) {
	t.Helper()
	var cm map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json")), &cm); err != nil {
		t.Fatalf("reading the kubeadm-config ConfigMap: %v", err)
	}
	data, _ := cm["data"].(map[string]any)
	doc, _ := data["ClusterConfiguration"].(string)
	changed := edit(doc)
	if changed == doc {
		t.Fatalf("the edit changed nothing in:\n%s", doc)
	}
	data["ClusterConfiguration"] = changed
	out, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(n.Dir, "kubeadm-config.json")
	writeFile(t, file, string(out))
	kubectl(t, n, "replace", "-f", file)
}
