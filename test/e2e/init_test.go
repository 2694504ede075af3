package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestInitSingleNode runs our kubeadm init on a fresh node with a real
// kubelet and containerd, checks the cluster it made, and that running
// init again neither destroys nor changes anything.
func TestInitSingleNode(t *testing.T) {
	n, cfg := singleNode(t, "e2e")
	ignore := ignoreFindings()

	t.Run("strict preflight reports exactly this machine's findings", func(t *testing.T) {
		r := run(t, n, "kubeadm", "init", "phase", "preflight", "--config", cfg)
		if r.Code != 2 {
			t.Fatalf("exit %d, want 2 (preflight)\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		got := checkNames(`\[ERROR ([^\]]+)\]`, r.Stdout+r.Stderr)
		want := append([]string(nil), testbed.PreflightFindings...)
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("failing checks %v, want %v\n%s", got, want, r.Stderr)
		}
	})

	t.Run("a run failing before kubelet-start leaves the kubelet stopped", func(t *testing.T) {
		// A patch that cannot apply fails the control-plane phase after
		// ours has started the kubelet ahead; upstream's order would not
		// have started it nor written its files, and ours undoes both.
		patches := t.TempDir()
		if err := os.WriteFile(filepath.Join(patches, "kube-apiserver+json.json"), []byte(`[{"op":"remove","path":"/spec/nosuchfield"}]`), 0o644); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(n.Dir, "bad-patch.yaml")
		doc := strings.Replace(testbed.InitConfig(n, testbed.KubernetesVersion, ""), "nodeRegistration:", "patches:\n  directory: "+patches+"\nnodeRegistration:", 1)
		if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, n, "kubeadm", "init", "--config", bad, ignore)
		if r.Code == 0 || !strings.Contains(r.Stderr, "error execution phase control-plane/apiserver") ||
			!strings.Contains(r.Stdout, "[kubelet-start] The run failed before this phase: stopping the kubelet") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if st := run(t, n, "systemctl", "is-active", "kubelet"); strings.TrimSpace(st.Stdout) != "inactive" {
			t.Errorf("the kubelet is %q after the failed run", st.Stdout)
		}
		for _, f := range []string{"config.yaml", "kubeadm-flags.env"} {
			if _, err := os.Stat(n.HostPath("/var/lib/kubelet/" + f)); !os.IsNotExist(err) {
				t.Errorf("/var/lib/kubelet/%s is left behind: %v", f, err)
			}
		}
		// What the failed run did write (certificates, kubeconfig files,
		// the etcd manifest) needs a reset, as after upstream's.
		if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
			t.Fatalf("reset: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	started := time.Now()
	r := run(t, n, "kubeadm", "init", "--config", cfg, ignore)
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("kubeadm init took %v", r.Took)

	t.Run("the kubelet was started before the manifests were written", func(t *testing.T) {
		// Ours gives the kubelet a head start on a fresh node (not upstream).
		fi, err := os.Stat(n.HostPath("/etc/kubernetes/manifests/kube-apiserver.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		launches, err := n.KubeletLaunches()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range launches {
			if !l.Before(started) && l.Before(fi.ModTime()) {
				t.Logf("kubelet launched %v before kube-apiserver.yaml was written", fi.ModTime().Sub(l).Round(time.Millisecond))
				return
			}
		}
		t.Errorf("no kubelet launch between init's start (%v) and kube-apiserver.yaml (%v): %v", started, fi.ModTime(), launches)
	})
	out := r.Stdout + r.Stderr
	for _, w := range testbed.PreflightFindings {
		if !strings.Contains(out, "[WARNING "+w+"]") {
			t.Errorf("init did not warn about the ignored check %s", w)
		}
	}
	token := regexp.MustCompile(`--token ([a-z0-9]{6})\.[a-z0-9]{16}`).FindStringSubmatch(out)
	if token == nil {
		t.Fatalf("no join command with a token in the output:\n%s", out)
	}
	// The lines scripts grep, as upstream's.
	for _, line := range []string{"\nYour Kubernetes control-plane has initialized successfully!\n",
		"\n  export KUBECONFIG=/etc/kubernetes/admin.conf\n",
		"\nThen you can join any number of worker nodes by running the following on each as root:\n"} {
		if !strings.Contains(r.Stdout, line) {
			t.Errorf("init's output has no line %q:\n%s", strings.TrimSpace(line), r.Stdout)
		}
	}

	t.Run("cluster", func(t *testing.T) {
		if got := kubectl(t, n, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"); got != "node1" {
			t.Errorf("nodes: %q", got)
		}
		nodeReady(t, n, "node1", 90*time.Second)
		for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			eventually(t, 60*time.Second, comp+" Running", func() error {
				return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "pod", comp+"-node1", "-o", "jsonpath={.status.phase}"), "Running")
			})
		}
		kubectl(t, n, "-n", "kube-system", "get", "deployment/coredns", "service/kube-dns", "configmap/coredns",
			"daemonset/kube-proxy", "configmap/kube-proxy", "configmap/kubeadm-config", "configmap/kubelet-config")
		eventually(t, 30*time.Second, "cluster-info signed", func() error {
			return expectOutput(kubectlTry(t, n, "-n", "kube-public", "get", "configmap", "cluster-info",
				"-o", "jsonpath={.data.jws-kubeconfig-"+token[1]+"}"), "nonempty")
		})
		eventually(t, 120*time.Second, "coredns available", func() error {
			return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.availableReplicas}"), "2")
		})
	})

	t.Run("config images pull through the node's containerd", func(t *testing.T) {
		// imagePullPolicy Never: every image must already be there, which
		// the CRI's image service confirms.
		r := run(t, n, "kubeadm", "config", "images", "pull", "--config", cfg)
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, ref := range requireToolchain(t).Images {
			if !strings.Contains(r.Stdout, ref) {
				t.Errorf("no line for %s in:\n%s", ref, r.Stdout)
			}
		}
	})

	t.Run("second init changes nothing", func(t *testing.T) {
		before := treeDigest(t, n.HostPath("/etc/kubernetes"))
		r := run(t, n, "kubeadm", "init", "--config", cfg, ignore)
		if r.Code != 2 {
			t.Fatalf("second init: exit %d, want 2 (preflight)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		found := checkNames(`\[ERROR ([^\]]+)\]`, r.Stdout+r.Stderr)
		for _, want := range []string{"Port-6443", "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml", "DirAvailable--var-lib-etcd"} {
			if !slices.Contains(found, want) {
				t.Errorf("second init did not report %s; it reported %v", want, found)
			}
		}
		if d := diffDigests(before, treeDigest(t, n.HostPath("/etc/kubernetes"))); len(d) > 0 {
			t.Errorf("a refused init changed /etc/kubernetes: %v", d)
		}
	})

	t.Run("init with preflight ignored converges", func(t *testing.T) {
		pki := treeDigest(t, n.HostPath("/etc/kubernetes/pki"))
		r := run(t, n, "kubeadm", "init", "--config", cfg, "--ignore-preflight-errors=all")
		if r.Code != 0 {
			t.Fatalf("init over a running control plane: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if d := diffDigests(pki, treeDigest(t, n.HostPath("/etc/kubernetes/pki"))); len(d) > 0 {
			t.Errorf("certificates or keys were replaced: %v", d)
		}
		nodeReady(t, n, "node1", 60*time.Second)
	})
}

// singleNode starts node1 of a new cluster called name, with its pod
// network configured, and writes the test bed's init configuration for it
// into the node's folder; it returns the node and that file's path.
func singleNode(t *testing.T, name string) (*testbed.Node, string) {
	t.Helper()
	nodes, err := newCluster(t, name).Up(context.Background(), "node1")
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if err := n.WriteCNIConfig(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(n.Dir, "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte(testbed.InitConfig(n, testbed.KubernetesVersion, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return n, cfg
}

// checkNames returns the sorted, distinct check names a pattern captures.
func checkNames(pattern, out string) []string {
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(out, -1) {
		seen[m[1]] = true
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
