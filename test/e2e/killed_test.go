package e2e

import (
	"context"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestInitKilled kills kubeadm init (SIGKILL, nothing to clean up after
// itself) at points from key generation to the addons, each on a fresh
// node, and checks that running init again with the preflight checks
// ignored (they rightly find the half-made control plane) finishes the job:
// no temporary file is left, every key the killed run wrote is kept, and
// the cluster works.
func TestInitKilled(t *testing.T) {
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
