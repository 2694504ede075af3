package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/test/testbed"
	"k8s.io/client-go/tools/clientcmd"
)

// TestInitKilled kills kubeadm init (SIGKILL, nothing to clean up after
// itself) at points from key generation to the addons, each on a fresh
// node, and checks that running init again with the preflight checks
// ignored (they rightly find the half-made control plane) finishes the job:
// no temporary file is left, every key the killed run wrote is kept, and
// the cluster works.
func TestInitKilled(t *testing.T) {
	longTest(t, "3 minutes")
	for i, marker := range []string{
		`[certs] Generating "apiserver" certificate and key`,
		`[kubeconfig] Writing "admin.conf"`,
		`[control-plane] Creating static Pod manifest for "kube-apiserver"`,
		`[control-plane-check] Checking kube-apiserver`,
		`[upload-config]`,
		`[bootstrap-token] Configuring`,
		`[kubelet-finalize]`,
		`[addons] Applied essential addon: CoreDNS`,
	} {
		t.Run(marker, func(t *testing.T) {
			n, cfg := singleNode(t, "killed"+strconv.Itoa(i))
			out := killAt(t, n, marker, "kubeadm", "init", "--config", cfg, ignoreFindings())
			// A temporary file the kill left half-written is not a key
			// the killed run wrote: the next run removes it.
			kept := treeDigest(t, n.HostPath("/etc/kubernetes/pki"))
			for name := range kept {
				if atomicfile.IsTempName(filepath.Base(name)) {
					delete(kept, name)
				}
			}

			r := run(t, n, "kubeadm", "init", "--config", cfg, "--ignore-preflight-errors=all")
			if r.Code != 0 {
				t.Fatalf("init after the killed one: exit %d\nkilled run:\n%s\nstdout:\n%s\nstderr:\n%s", r.Code, tail(out, 20), r.Stdout, r.Stderr)
			}
			t.Logf("init after the killed one took %v", r.Took.Round(time.Millisecond))
			now := treeDigest(t, n.HostPath("/etc/kubernetes/pki"))
			for name, digest := range kept {
				if now[name] != digest {
					t.Errorf("pki/%s, written by the killed run, was replaced", name)
				}
			}
			for _, dir := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
				noTempFiles(t, n.HostPath(dir))
			}

			token := regexp.MustCompile(`--token ([a-z0-9]{6})\.[a-z0-9]{16}`).FindStringSubmatch(r.Stdout)
			if token == nil {
				t.Fatalf("no join command with a token in the output:\n%s", r.Stdout)
			}
			nodeReady(t, n, "node1", 90*time.Second)
			for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
				eventually(t, 60*time.Second, comp+" Running", func() error {
					return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "pod", comp+"-node1", "-o", "jsonpath={.status.phase}"), "Running")
				})
			}
			kubectl(t, n, "-n", "kube-system", "get", "deployment/coredns", "daemonset/kube-proxy",
				"configmap/kubeadm-config", "configmap/kubelet-config")
			eventually(t, 30*time.Second, "cluster-info signed for the new token", func() error {
				return expectOutput(kubectlTry(t, n, "-n", "kube-public", "get", "configmap", "cluster-info",
					"-o", "jsonpath={.data.jws-kubeconfig-"+token[1]+"}"), "nonempty")
			})
		})
	}
}

// TestJoinKilled kills the control-plane join of node2 at points from its
// certificates to its etcd member's promotion, and checks that running
// join again with the preflight checks ignored finishes the job: an etcd
// member announced as a learner by the killed run is found and promoted,
// not added twice. After each point node2 is reset and its Node deleted,
// so the next point starts from a node that never joined.
func TestJoinKilled(t *testing.T) {
	longTest(t, "2.5 minutes")
	c := newCluster(t, "joinkilled")
	nodes, err := c.Up(context.Background(), "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, testbed.InitConfig(n1, testbed.KubernetesVersion, ""))
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	join := func(ignore string) []string {
		return []string{"kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n2.Addr().String(), ignore}
	}
	for _, marker := range []string{
		`[certs] Generating "apiserver"`,
		`[kubelet-start] Waiting for the kubelet`,
		`[etcd] Announced`,
		`[etcd] Waiting for the new etcd member`,
		`[mark-control-plane]`,
	} {
		t.Run(marker, func(t *testing.T) {
			out := killAt(t, n2, marker, join(ignoreFindings())...)
			args := join("--ignore-preflight-errors=all")
			r := run(t, n2, args[0], args[1:]...)
			if r.Code != 0 {
				t.Fatalf("join after the killed one: exit %d\nkilled run:\n%s\nstdout:\n%s\nstderr:\n%s", r.Code, tail(out, 20), r.Stdout, r.Stderr)
			}
			t.Logf("join after the killed one took %v", r.Took.Round(time.Millisecond))
			for _, dir := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
				noTempFiles(t, n2.HostPath(dir))
			}
			checkVoters(t, etcdMemberList(t, n1), 2)
			nodeReady(t, n1, "node2", 90*time.Second)
			if labels := kubectl(t, n2, "get", "node", "node2", "-o", "jsonpath={.metadata.labels}"); !strings.Contains(labels, "node-role.kubernetes.io/control-plane") {
				t.Errorf("node2's labels: %s", labels)
			}

			mustRun(t, n2, "kubeadm", "reset", "--force")
			if members := etcdMemberList(t, n1); len(members) != 1 {
				t.Fatalf("etcd members after resetting node2: %v", members)
			}
			kubectl(t, n1, "delete", "node", "node2")
		})
	}
	t.Run("join run again on a joined, Ready node", func(t *testing.T) {
		// Upstream's refuses a Ready Node of the joining node's name; ours
		// takes it as this machine's when the kubelet here holds its
		// credentials, and converges.
		args := join(ignoreFindings())
		mustRun(t, n2, args[0], args[1:]...)
		nodeReady(t, n1, "node2", 90*time.Second)
		args = join("--ignore-preflight-errors=all")
		r := run(t, n2, args[0], args[1:]...)
		if r.Code != 0 || !strings.Contains(r.Stdout, `The Ready Node "node2" is this machine's`) {
			t.Fatalf("join again: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
		}
		checkVoters(t, etcdMemberList(t, n1), 2)
		nodeReady(t, n1, "node2", 60*time.Second)
	})
}

// killAt runs a command in node n and kills it (SIGKILL) as soon as its
// output has a line with marker; it returns the file (a host path) that
// holds the output. A shell inside the node watches the output every 5 ms,
// so the command gets a little further than the line. The test fails when
// the command ends before printing it.
func killAt(t *testing.T, n *testbed.Node, marker string, command ...string) string {
	t.Helper()
	out := filepath.Join(n.Dir, "killed.out")
	script := `out=$1 marker=$2; shift 2; "$@" >"$out" 2>&1 & pid=$!
until grep -qF -- "$marker" "$out"; do kill -0 $pid 2>/dev/null || exit 3; sleep 0.005; done
kill -9 $pid; wait $pid; exit 0`
	r := run(t, n, "sh", append([]string{"-c", script, "sh", out, marker}, command...)...)
	if r.Code != 0 {
		t.Fatalf("%s ended (exit %d) before printing %q:\n%s", command[0], r.Code, marker, tail(out, 30))
	}
	return out
}

// noTempFiles fails the test for every temporary file of an atomic write
// (".<name>.tmp-<pid>-…") under root, a host folder.
func noTempFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if atomicfile.IsTempName(d.Name()) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Errorf("listing %s: %v", root, err)
	}
}

// resetKillPoint is a line reset prints, where the test kills it, with
// what the test does before (prepare) and checks right after the kill
// (landed: that the kill came where it means).
type resetKillPoint struct {
	marker  string
	prepare func(t *testing.T)
	landed  func(t *testing.T)
}

// TestResetKilled kills "kubeadm reset" of a control-plane node (node2,
// joined to node1, so that its etcd member has a cluster to leave) at
// three points and checks that reset run again leaves what an
// uninterrupted reset leaves, which the test first records: node2's
// kubeadm, kubelet and etcd folders as before its join, no kubelet, no
// container, no mount below /var/lib/kubelet, and node1's etcd with one
// voting member and its API server answering. The points: just after
// node2's etcd member was removed (its manifests and data still there,
// the kubelet still running them); after the kubelet was stopped, while
// the pods are stopped and removed; while the folders are emptied (a
// folder of many files in /var/lib/kubelet, as pods' volumes can leave,
// makes that take long enough to land in). Between points node2 joins again and its Node is
// deleted after each reset.
func TestResetKilled(t *testing.T) {
	c := newCluster(t, "resetkilled")
	nodes, err := c.Up(context.Background(), "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	before := nodeFiles(t, n2)
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, testbed.InitConfig(n1, testbed.KubernetesVersion, ""))
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	join := func(t *testing.T) {
		t.Helper()
		r := run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n2.Addr().String(), ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("control-plane join of node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		checkVoters(t, etcdMemberList(t, n1), 2)
		// The kubelet runs the control plane's Pods, whose volumes it
		// mounts below /var/lib/kubelet: reset has those to undo.
		eventually(t, 60*time.Second, "node2's etcd and kube-apiserver mirror Pods", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", "etcd-node2", "kube-apiserver-node2", "-o", "name"),
				"pod/etcd-node2\npod/kube-apiserver-node2")
		})
	}
	// What reset leaves; said is what the last reset printed.
	checkReset := func(t *testing.T, said string) {
		t.Helper()
		var wrong []string
		if d := diffDigests(before, nodeFiles(t, n2)); len(d) > 0 {
			wrong = append(wrong, fmt.Sprintf("files differ from before the join: %v", d))
		}
		if got := strings.TrimSpace(run(t, n2, "systemctl", "is-active", "kubelet").Stdout); got == "active" {
			wrong = append(wrong, "the kubelet still runs")
		}
		if got := strings.TrimSpace(mustRun(t, n2, "ctr", "-n", "k8s.io", "-a", "/run/containerd/containerd.sock", "containers", "ls", "-q")); got != "" {
			wrong = append(wrong, "containers left: "+strings.ReplaceAll(got, "\n", " "))
		}
		if m := mountsBelow(t, n2, "/var/lib/kubelet"); len(m) > 0 {
			wrong = append(wrong, fmt.Sprintf("mounts left below /var/lib/kubelet: %v", m))
		}
		if len(wrong) > 0 {
			t.Errorf("after the reset of node2: %s\nthe reset printed:\n%s", strings.Join(wrong, "; "), said)
		}
		checkVoters(t, etcdMemberList(t, n1), 1)
		kubectl(t, n1, "get", "nodes")
	}

	t.Run("uninterrupted", func(t *testing.T) {
		join(t)
		r := run(t, n2, "kubeadm", "reset", "--force")
		if r.Code != 0 {
			t.Fatalf("reset: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("an uninterrupted reset took %v", r.Took.Round(time.Millisecond))
		checkReset(t, r.Stdout)
		kubectl(t, n1, "delete", "node", "node2")
	})
	if t.Failed() {
		t.FailNow()
	}

	// Not under pods/, whose unknown folders the kubelet removes itself.
	filler := n2.HostPath("/var/lib/kubelet/zz-filler")
	for _, p := range []resetKillPoint{
		{
			marker: `[reset] Removed the etcd member "node2"`,
			landed: func(t *testing.T) {
				if members := etcdMemberList(t, n1); len(members) != 1 {
					t.Errorf("etcd members after the kill: %v, want node1's only", members)
				}
				if _, err := os.Stat(n2.HostPath("/etc/kubernetes/manifests/etcd.yaml")); err != nil {
					t.Errorf("the kill came after node2's manifests were deleted: %v", err)
				}
			},
		},
		{
			marker: `[reset] Stopping and removing every pod`,
			landed: func(t *testing.T) {
				left := strings.Fields(mustRun(t, n2, "ctr", "-n", "k8s.io", "-a", "/run/containerd/containerd.sock", "containers", "ls", "-q"))
				t.Logf("%d containers left by the killed reset", len(left))
			},
		},
		{
			marker: `[reset] Emptying the folders`,
			prepare: func(t *testing.T) {
				if err := os.MkdirAll(filler, 0o750); err != nil {
					t.Fatal(err)
				}
				for i := range 20000 {
					if err := os.WriteFile(filepath.Join(filler, strconv.Itoa(i)), nil, 0o640); err != nil {
						t.Fatal(err)
					}
				}
			},
			landed: func(t *testing.T) {
				manifests, _ := os.ReadDir(n2.HostPath("/etc/kubernetes/manifests"))
				rest, _ := os.ReadDir(filler)
				_, caErr := os.Stat(n2.HostPath("/etc/kubernetes/pki/ca.crt"))
				if len(manifests) > 0 || len(rest) == 0 || caErr != nil {
					t.Fatalf("the kill did not come while /var/lib/kubelet was emptied: %d manifests, %d filler files, pki/ca.crt: %v",
						len(manifests), len(rest), caErr)
				}
			},
		},
	} {
		t.Run(p.marker, func(t *testing.T) {
			join(t)
			if p.prepare != nil {
				p.prepare(t)
			}
			out := killAt(t, n2, p.marker, "kubeadm", "reset", "--force")
			p.landed(t)
			r := run(t, n2, "kubeadm", "reset", "--force")
			if r.Code != 0 {
				t.Fatalf("reset after the killed one: exit %d\nkilled run:\n%s\nstdout:\n%s\nstderr:\n%s", r.Code, tail(out, 20), r.Stdout, r.Stderr)
			}
			t.Logf("reset after the killed one took %v", r.Took.Round(time.Millisecond))
			checkReset(t, "killed run:\n"+tail(out, 20)+"\nrun again:\n"+r.Stdout)
			kubectl(t, n1, "delete", "node", "node2")
		})
	}
}

// mountsBelow lists the mount points strictly below dir in node n's mount
// view.
func mountsBelow(t *testing.T, n *testbed.Node, dir string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(mustRun(t, n, "cat", "/proc/self/mountinfo"), "\n") {
		// "id parent major:minor root mount-point options ..."
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// TestUpgradeKilled kills "kubeadm upgrade apply" at three points and
// "kubeadm upgrade node" at two, and checks that the command run again
// ends as an uninterrupted one to the same version: the same manifests
// (byte for byte), kubeadm-config and kubelet-config, kubelet
// configuration files and addon images, the control plane running the
// target version and Ready, etcd healthy, no temporary file left. The
// versions are the test bed's upgrade, testbed.UpgradeFromVersion to
// testbed.KubernetesVersion, and back: apply --force takes a cluster one
// release back through the same phases, so one cluster serves every point.
//
// Apply, on node1 alone: an uninterrupted upgrade and an uninterrupted
// downgrade give the two end states to compare with; the killed applies
// alternate between the versions. The points: kube-apiserver's new
// manifest written, while the kubelet restarts it (an upgrade); while the
// configuration is uploaded, after the whole control plane was replaced
// (a downgrade); etcd's new manifest written, after its backup. For the first, etcd must be older
// than the target's: the etcd image it runs is given an older tag (see
// etcdBehind) unless the target's etcd is newer anyway, as in a minor
// upgrade, and the test checks that apply wrote etcd's manifest.
//
// Node: node2 then joins as a second control-plane node, and each apply on
// node1 leaves it behind; its "upgrade node" (the last control-plane
// node's, which also upgrades the addons) is run uninterrupted once, then
// killed while its kube-apiserver restarts and after CoreDNS was upgraded
// (kube-proxy not yet). Run again, it must end as the uninterrupted run to
// the same version did, and a further run must change nothing.
//
// The certificates compared are what they say (subject, issuer, names,
// usages, key), not their serials and dates: every apply renews them.
func TestUpgradeKilled(t *testing.T) {
	longTest(t, "30 minutes")
	from, to := requireUpgradeToolchains(t)
	c := manageCluster(t, from.UpgradeCluster(to, "upkilled", clusterStateDir("upkilled"), testWriter{t}))
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
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
	// etcd is never taken back to an older image: once an apply to `to`
	// ran, every end state has to's etcd (the newer of the two).
	wantEtcd := imageRef(t, to, "etcd")
	if older, err := etcdTagLess(upgrade.ImageTag(wantEtcd), upgrade.ImageTag(imageRef(t, from, "etcd"))); err != nil || older {
		t.Fatalf("the etcd of %s (%s) is older than the etcd of %s, or unreadable (%v)", to.KubernetesVersion, wantEtcd, from.KubernetesVersion, err)
	}
	// The tag etcdBehind gives to's etcd image must not be a real
	// image's.
	if older, err := etcdTagBefore(upgrade.ImageTag(wantEtcd)); err != nil || "registry.k8s.io/etcd:"+older == imageRef(t, from, "etcd") {
		t.Fatalf("no tag older than %s to give it that is not %s's etcd (%q, %v)", wantEtcd, from.KubernetesVersion, older, err)
	}

	initCfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, initCfg, testbed.InitConfig(n1, from.KubernetesVersion, ""))
	r := run(t, n1, "kubeadm", "init", "--config", initCfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init at %s: exit %d\n%s\n%s", from.KubernetesVersion, r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	nodeReady(t, n1, "node1", 2*time.Minute)
	// A setting of the administrator's that every apply must keep.
	setKubeletConfigField(t, n1, "maxPods", "120")

	// In node1's folder, which every node sees (host folders are visible).
	upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
	writeFile(t, upgradeCfg, upgradeConfiguration("3m"))
	// A downgrade needs forceUpgrade, which goes in the file: --force
	// cannot be mixed with --config.
	downgradeCfg := filepath.Join(n1.Dir, "downgrade.yaml")
	writeFile(t, downgradeCfg, strings.Replace(upgradeConfiguration("3m"), "apply:\n", "apply:\n  forceUpgrade: true\n", 1))
	etcdManifest := n1.HostPath("/etc/kubernetes/manifests/etcd.yaml")
	apply := func(tc *testbed.Toolchain) []string {
		cfg := upgradeCfg
		if tc == from {
			cfg = downgradeCfg
		}
		return []string{"kubeadm", "upgrade", "apply", tc.KubernetesVersion, "--yes", "--config", cfg}
	}
	// checkUpgraded checks that node n runs tc's control plane and
	// returns its end state; addons says whether they must be at tc's
	// version too (not while another control-plane node lags behind).
	checkUpgraded := func(t *testing.T, n *testbed.Node, tc *testbed.Toolchain, addons bool) map[string]string {
		t.Helper()
		checkControlPlaneAt(t, n1, n, tc)
		checkEtcdAt(t, n1, n, wantEtcd)
		mustRun(t, n, "etcdctl", "--endpoints=https://127.0.0.1:2379", "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
			"--cert=/etc/kubernetes/pki/apiserver-etcd-client.crt", "--key=/etc/kubernetes/pki/apiserver-etcd-client.key", "endpoint", "health")
		if got := clusterVersion(t, n1); got != tc.KubernetesVersion {
			t.Errorf("kubeadm-config says kubernetesVersion %q, want %s", got, tc.KubernetesVersion)
		}
		checkMaxPods(t, n, "120")
		if addons {
			checkKubeProxy(t, n1, tc)
			// Our kubeadm's CoreDNS, whatever the control plane's version
			// (as upstream's: v1.37.2 deploys CoreDNS v1.14.6 for v1.36
			// too).
			if got, want := kubectl(t, n1, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.spec.template.spec.containers[0].image}"), imageRef(t, to, "coredns"); got != want {
				t.Errorf("CoreDNS Deployment image %q, want %s", got, want)
			}
			kubectl(t, n1, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=3m")
		}
		nodeReady(t, n1, n.Name, 2*time.Minute)
		for _, dir := range []string{"/etc/kubernetes", "/var/lib/kubelet"} {
			noTempFiles(t, n.HostPath(dir))
		}
		return upgradeState(t, n)
	}
	// etcdReplaced checks, with our kubeadm, that an apply's output shows
	// it wrote etcd's new manifest.
	etcdReplaced := func(t *testing.T, out string) {
		t.Helper()
		if !otherKubeadm() && !strings.Contains(out, `Writing the new manifest to "/etc/kubernetes/manifests/etcd.yaml"`) {
			t.Errorf("apply did not replace etcd's manifest:\n%s", out)
		}
	}

	want := map[string]map[string]string{}
	for _, tc := range []*testbed.Toolchain{to, from} {
		t.Run("uninterrupted apply to "+tc.KubernetesVersion, func(t *testing.T) {
			if tc == to {
				etcdBehind(t, n1, etcdManifest, wantEtcd)
			}
			controlPlaneSettled(t, n1)
			args := apply(tc)
			r := runWithin(t, 10*time.Minute, n1, args[0], args[1:]...)
			if r.Code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
			}
			t.Logf("an uninterrupted apply to %s took %v", tc.KubernetesVersion, r.Took.Round(time.Millisecond))
			if tc == to {
				etcdReplaced(t, r.Stdout)
			}
			want[tc.KubernetesVersion] = checkUpgraded(t, n1, tc, true)
		})
		if t.Failed() {
			t.FailNow()
		}
	}

	for _, p := range []struct {
		to      *testbed.Toolchain
		marker  string
		etcdToo bool
	}{
		// Killed while the API server restarts, the controller manager
		// and the scheduler are still the older release's: an upgrade,
		// as the skew policy allows (killed in a downgrade, a newer
		// scheduler would face an older API server and might never lead).
		{to: to, marker: `for the kubelet to restart "kube-apiserver"`},
		{to: from, marker: `[upload-config] Storing the cluster configuration`},
		{to: to, marker: `for the kubelet to restart "etcd"`, etcdToo: true},
	} {
		t.Run("apply to "+p.to.KubernetesVersion+" killed at "+p.marker, func(t *testing.T) {
			if p.etcdToo {
				etcdBehind(t, n1, etcdManifest, wantEtcd)
			}
			controlPlaneSettled(t, n1)
			args := apply(p.to)
			out := killAt(t, n1, p.marker, args...)
			if p.etcdToo {
				// The kill came during etcd's replacement: its new
				// manifest is written.
				if got := manifestImage(t, etcdManifest); got != wantEtcd {
					t.Fatalf("after the kill etcd's manifest has image %s, want %s (apply did not replace etcd):\n%s", got, wantEtcd, tail(out, 20))
				}
			}
			// As an administrator would, wait until the control plane
			// answers again (see controlPlaneSettled).
			controlPlaneSettled(t, n1)
			r := runWithin(t, 10*time.Minute, n1, args[0], args[1:]...)
			if r.Code != 0 {
				t.Fatalf("apply after the killed one: exit %d\nkilled run:\n%s\nstdout:\n%s\nstderr:\n%s", r.Code, tail(out, 20), r.Stdout, r.Stderr)
			}
			t.Logf("apply after the killed one took %v", r.Took.Round(time.Millisecond))
			got := checkUpgraded(t, n1, p.to, true)
			if d := diffDigests(want[p.to.KubernetesVersion], got); len(d) > 0 {
				t.Errorf("the end state differs from an uninterrupted apply's in %v\nkilled run:\n%s\nrun again:\n%s", d, tail(out, 20), r.Stdout)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}

	// upgrade node. node1 is at to's version now; node2 joins there.
	t.Run("node2 joins", func(t *testing.T) {
		r := run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n2.Addr().String(), ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("control-plane join of node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		checkVoters(t, etcdMemberList(t, n1), 2)
		nodeReady(t, n1, "node2", 2*time.Minute)
	})
	if t.Failed() {
		t.FailNow()
	}
	node := []string{"kubeadm", "upgrade", "node", "--config", upgradeCfg}
	// applyOnNode1 takes the cluster to tc's version, node2 left behind.
	applyOnNode1 := func(t *testing.T, tc *testbed.Toolchain) {
		t.Helper()
		controlPlaneSettled(t, n1)
		args := apply(tc)
		r := runWithin(t, 10*time.Minute, n1, args[0], args[1:]...)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
		checkControlPlaneAt(t, n1, n1, tc)
		controlPlaneSettled(t, n1)
	}
	// unchanged runs upgrade node once more on a converged node2 and
	// checks it changes nothing.
	unchanged := func(t *testing.T, tc *testbed.Toolchain, state map[string]string) {
		t.Helper()
		r := runWithin(t, 10*time.Minute, n2, node[0], node[1:]...)
		if r.Code != 0 {
			t.Fatalf("upgrade node run again: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "Writing the new manifest") {
			t.Errorf("upgrade node run on a converged node replaced a manifest:\n%s", r.Stdout)
		}
		if d := diffDigests(state, checkUpgraded(t, n2, tc, true)); len(d) > 0 {
			t.Errorf("upgrade node run on a converged node changed %v:\n%s", d, r.Stdout)
		}
	}
	nodeWant := map[string]map[string]string{}
	t.Run("uninterrupted upgrade node to "+from.KubernetesVersion, func(t *testing.T) {
		applyOnNode1(t, from)
		r := runWithin(t, 10*time.Minute, n2, node[0], node[1:]...)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("an uninterrupted upgrade node to %s took %v", from.KubernetesVersion, r.Took.Round(time.Millisecond))
		nodeWant[from.KubernetesVersion] = checkUpgraded(t, n2, from, true)
		unchanged(t, from, nodeWant[from.KubernetesVersion])
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range []struct {
		to     *testbed.Toolchain
		marker string
	}{
		{to: to, marker: `for the kubelet to restart "kube-apiserver"`},
		{to: from, marker: `[addons] Applied essential addon: CoreDNS`},
	} {
		t.Run("upgrade node to "+p.to.KubernetesVersion+" killed at "+p.marker, func(t *testing.T) {
			applyOnNode1(t, p.to)
			out := killAt(t, n2, p.marker, node...)
			controlPlaneSettled(t, n1)
			r := runWithin(t, 10*time.Minute, n2, node[0], node[1:]...)
			if r.Code != 0 {
				t.Fatalf("upgrade node after the killed one: exit %d\nkilled run:\n%s\nstdout:\n%s\nstderr:\n%s", r.Code, tail(out, 20), r.Stdout, r.Stderr)
			}
			t.Logf("upgrade node after the killed one took %v", r.Took.Round(time.Millisecond))
			got := checkUpgraded(t, n2, p.to, true)
			if w, ok := nodeWant[p.to.KubernetesVersion]; ok {
				if d := diffDigests(w, got); len(d) > 0 {
					t.Errorf("node2's end state differs from an uninterrupted upgrade node's in %v\nkilled run:\n%s\nrun again:\n%s", d, tail(out, 20), r.Stdout)
				}
			}
			unchanged(t, p.to, got)
		})
		if t.Failed() {
			t.FailNow()
		}
	}
}

// checkEtcdAt checks that node n's etcd runs image want, in its manifest
// and in the container its kubelet runs. The container is read from the
// mirror Pod's spec, not its status: for an image with two tags (see
// etcdBehind) containerd reports the first of them as the container's
// image, whichever the Pod named.
func checkEtcdAt(t *testing.T, api, n *testbed.Node, want string) {
	t.Helper()
	if got := manifestImage(t, n.HostPath("/etc/kubernetes/manifests/etcd.yaml")); got != want {
		t.Errorf("%s's etcd manifest has image %q, want %s", n.Name, got, want)
	}
	eventually(t, 3*time.Minute, "etcd of "+n.Name+" running "+want, func() error {
		return expectOutput(kubectlTry(t, api, "-n", "kube-system", "get", "pod", "etcd-"+n.Name, "-o",
			`jsonpath={.spec.containers[0].image} {.status.containerStatuses[0].ready}`), want+" true")
	})
}

// etcdBehind makes node n's etcd older than the image want (a reference
// of registry.k8s.io/etcd), so that an apply to the release that lists
// want replaces etcd: a patch upgrade lists the same etcd on both sides.
// When n's etcd runs an older tag already (a minor upgrade), it does
// nothing; otherwise it gives the image n's etcd runs a tag older than
// want's (etcdTagBefore) and points etcd's manifest at it. The binary
// stays the same, so etcd's data needs no downgrade.
func etcdBehind(t *testing.T, n *testbed.Node, manifest, want string) {
	t.Helper()
	cur, wantTag := upgrade.ImageTag(manifestImage(t, manifest)), upgrade.ImageTag(want)
	behind, err := etcdTagLess(cur, wantTag)
	if err != nil {
		t.Fatal(err)
	}
	if behind {
		return
	}
	older, err := etcdTagBefore(wantTag)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	runEtcdTag(t, n, manifest, cur, older)
	t.Logf("%s's etcd runs its image under the tag %s after %v", n.Name, older, time.Since(began).Round(time.Second))
}

// etcdTagLess compares two etcd image tags ("3.6.8-0") as kubeadm does.
func etcdTagLess(a, b string) (bool, error) {
	va, err := upgrade.EtcdTagVersion(a)
	if err != nil {
		return false, err
	}
	vb, err := upgrade.EtcdTagVersion(b)
	if err != nil {
		return false, err
	}
	return va.LessThan(vb), nil
}

// etcdTagBefore returns a tag that kubeadm reads as older than tag
// ("X.Y.Z-N"): the previous patch release, or for X.Y.0 the first of
// the previous minor release.
func etcdTagBefore(tag string) (string, error) {
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(-.*)?$`).FindStringSubmatch(tag)
	if m == nil {
		return "", fmt.Errorf("etcd image tag %q is not X.Y.Z[-N]", tag)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	switch {
	case patch > 0:
		patch--
	case minor > 0:
		minor, patch = minor-1, 0
	default:
		return "", fmt.Errorf("no etcd release before %q to tag", tag)
	}
	return fmt.Sprintf("%d.%d.%d%s", major, minor, patch, m[4]), nil
}

// controlPlaneSettled waits until the API server of node n answers and
// the controller manager and the scheduler each lead (their Lease renewed
// in the last six seconds; they renew every two). When etcd or the API
// server restarts, both lose their Lease, restart and take a while to win
// it again; meanwhile no Job runs, and the CreateJob health check of
// "upgrade apply" (which waits 15 s for one, as upstream's) fails.
func controlPlaneSettled(t *testing.T, n *testbed.Node) {
	t.Helper()
	began := time.Now()
	eventually(t, 4*time.Minute, "the controller manager and the scheduler leading", func() error {
		for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
			r := kubectlTry(t, n, "-n", "kube-system", "get", "lease", lease, "-o", "jsonpath={.spec.renewTime}")
			if r.err != nil {
				return r.err
			}
			renewed, err := time.Parse(time.RFC3339Nano, r.out)
			if err != nil {
				return fmt.Errorf("%s's Lease: %w", lease, err)
			}
			if age := time.Since(renewed); age > 6*time.Second {
				return fmt.Errorf("%s's Lease was renewed %v ago", lease, age.Round(time.Second))
			}
		}
		return nil
	})
	if d := time.Since(began); d > time.Second {
		t.Logf("the control plane settled after %v", d.Round(time.Second))
	}
}

// upgradeState is what an upgrade leaves that the killed-apply test
// compares: the static Pod manifests (digests), the ClusterConfiguration
// in kubeadm-config, the kubelet-config ConfigMap, the kubelet's files of
// the node, and the images of the addons.
func upgradeState(t *testing.T, n *testbed.Node) map[string]string {
	t.Helper()
	s := map[string]string{}
	for name, digest := range treeDigest(t, n.HostPath("/etc/kubernetes/manifests")) {
		s["manifests/"+name] = digest
	}
	s["kubeadm-config"] = kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data}")
	s["kubelet-config"] = kubectl(t, n, "-n", "kube-system", "get", "configmap", "kubelet-config", "-o", "jsonpath={.data}")
	for _, f := range []string{"config.yaml", "kubeadm-flags.env", "instance-config.yaml"} {
		s["/var/lib/kubelet/"+f] = readFile(t, n.HostPath("/var/lib/kubelet/"+f))
	}
	s["kube-proxy"] = kubectl(t, n, "-n", "kube-system", "get", "daemonset", "kube-proxy", "-o", "jsonpath={.spec.template.spec.containers[*].image}")
	s["coredns"] = kubectl(t, n, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.spec.template.spec.containers[*].image}")
	s["kube-proxy ConfigMap"] = kubectl(t, n, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data}")
	for name, digest := range treeDigest(t, n.HostPath("/etc/kubernetes/pki")) {
		switch {
		case strings.HasSuffix(name, ".key") && !isCAKey(name):
			// Every renewal makes a new key (as upstream's does): what
			// must hold is that the key is its certificate's.
			crt := n.HostPath("/etc/kubernetes/pki/" + strings.TrimSuffix(name, ".key") + ".crt")
			if _, err := tls.LoadX509KeyPair(crt, n.HostPath("/etc/kubernetes/pki/"+name)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			s["pki/"+name] = "the key of its certificate"
			continue
		case !strings.HasSuffix(name, ".crt"):
			s["pki/"+name] = digest // the CAs' and service accounts' keys: never replaced by an upgrade
			continue
		}
		s["pki/"+name] = certSummary(t, readFile(t, n.HostPath("/etc/kubernetes/pki/"+name)))
	}
	for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf", "kubelet.conf"} {
		cfg, err := clientcmd.LoadFromFile(n.HostPath("/etc/kubernetes/" + f))
		if err != nil {
			t.Fatal(err)
		}
		for name, user := range cfg.AuthInfos {
			id := user.ClientCertificate // kubelet.conf: the rotated file's path
			if len(user.ClientCertificateData) > 0 {
				id = certSummary(t, string(user.ClientCertificateData))
			}
			s[f+" user "+name] = id
		}
		for name, cluster := range cfg.Clusters {
			s[f+" cluster "+name] = cluster.Server + " " + certSummary(t, string(cluster.CertificateAuthorityData))
		}
	}
	return s
}

// isCAKey says whether name, relative to the pki folder, is the key of a
// CA or of the service accounts, which no upgrade replaces.
func isCAKey(name string) bool {
	switch name {
	case "ca.key", "front-proxy-ca.key", "etcd/ca.key", "sa.key":
		return true
	}
	return false
}

// certSummary is what a PEM certificate says, without what a renewal
// changes (serial, dates, a leaf's key): subject, issuer, names, usages,
// a CA's public key digest, and whether it is valid now and for most of a
// year.
func certSummary(t *testing.T, data string) string {
	t.Helper()
	b, _ := pem.Decode([]byte(data))
	if b == nil {
		t.Fatalf("no PEM block in %q", data)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key := "renewed"
	if c.IsCA {
		d := sha256.Sum256(c.RawSubjectPublicKeyInfo)
		key = fmt.Sprintf("%x", d[:8])
	}
	now := time.Now()
	return fmt.Sprintf("subject=%s issuer=%s dns=%v ips=%v usage=%v ext=%v ca=%v key=%s valid=%v",
		c.Subject, c.Issuer, c.DNSNames, c.IPAddresses, c.KeyUsage, c.ExtKeyUsage, c.IsCA, key,
		c.NotBefore.Before(now) && c.NotAfter.After(now.AddDate(0, 11, 0)))
}

func TestEtcdTagBefore(t *testing.T) {
	for tag, want := range map[string]string{"3.6.8-0": "3.6.7-0", "3.7.0-0": "3.6.0-0", "3.6.1": "3.6.0", "3.0.0-0": "", "v3.6.8": ""} {
		got, err := etcdTagBefore(tag)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("etcdTagBefore(%q) = %q, %v; want %q", tag, got, err, want)
		}
		if want == "" {
			continue
		}
		if older, err := etcdTagLess(got, tag); err != nil || !older {
			t.Errorf("kubeadm does not read %s as older than %s (%v)", got, tag, err)
		}
	}
}
