package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestUpgradeReapply is CI's quick proof of the upgrade path: on a
// control-plane node and a worker made by our kubeadm, "upgrade plan",
// then "upgrade apply" and "upgrade node" to the release the cluster
// already runs, as an administrator re-applies a changed configuration.
// Every phase runs (preflight, health checks, the control-plane
// manifests rewritten with a patch of the administrator's and their Pods
// replaced one by one, kubelet configuration, addons), with no second
// release to build: the minor upgrade is TestUpgrade's, which
// takes about 25 minutes and runs with make e2e-full. A Deployment on
// the worker is probed through its Service during all of it.
func TestUpgradeReapply(t *testing.T) {
	tc := requireToolchain(t)
	v := tc.KubernetesVersion
	c := newCluster(t, "e2eur")
	nodes, err := c.Up(context.Background(), "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodes[0], nodes[1]
	t.Cleanup(func() {
		if t.Failed() {
			dumpControlPlane(t, n1)
		}
	})
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	initCfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, initCfg, testbed.InitConfig(n1, v, ""))
	r := run(t, n1, "kubeadm", "init", "--config", initCfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	r = run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("worker join of node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 3*time.Minute)
	}
	// A change of the administrator's that the re-apply carries to every
	// kubelet's config.yaml.
	setKubeletConfigField(t, n1, "maxPods", "120")
	p := startProbe(t, n1, n2, tc)
	t.Cleanup(func() { p.stop(t) })

	r = run(t, n1, "kubeadm", "upgrade", "plan")
	if r.Code != 0 || !strings.Contains(r.Stdout, "[upgrade] Running cluster health checks") {
		t.Fatalf("upgrade plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	p.mark(t, "plan")

	// The administrator's change: an annotation patched into every
	// control-plane manifest, so each component's Pod is replaced and
	// waited for (unchanged manifests are left alone, as upstream's).
	patches := filepath.Join(n1.Dir, "patches")
	if err := os.MkdirAll(patches, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, comp := range controlPlaneComponents() {
		writeFile(t, filepath.Join(patches, comp+"+merge.yaml"), "metadata:\n  annotations:\n    e2e.kubeadm-go/reapplied: \"yes\"\n")
	}
	cfg := filepath.Join(n1.Dir, "upgrade.yaml")
	writeFile(t, cfg, strings.Replace(upgradeConfiguration("3m"), "apply:\n", "apply:\n  patches:\n    directory: "+patches+"\n", 1))
	r = runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", v, "--yes", "--config", cfg)
	if r.Code != 0 {
		t.Fatalf("upgrade apply %s: exit %d\n%s\n%s", v, r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("upgrade apply took %v", r.Took)
	if want := `[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "` + v + `".`; !strings.Contains(r.Stdout, want) {
		t.Errorf("upgrade apply does not end with %q:\n%s", want, r.Stdout)
	}
	for _, comp := range controlPlaneComponents() {
		if m := readFile(t, n1.HostPath("/etc/kubernetes/manifests/"+comp+".yaml")); !strings.Contains(m, "e2e.kubeadm-go/reapplied") {
			t.Errorf("%s's manifest lacks the patched annotation:\n%s", comp, m)
		}
		eventually(t, 3*time.Minute, comp+" restarted with the patch", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", comp+"-node1", "-o",
				`jsonpath={.metadata.annotations.e2e\.kubeadm-go/reapplied} {.status.containerStatuses[0].ready}`), "yes true")
		})
	}
	checkControlPlaneAt(t, n1, n1, tc)
	checkEtcdAt(t, n1, n1, imageRef(t, tc, "etcd"))
	checkAddons(t, n1, tc)
	checkMaxPods(t, n1, "120")
	if got := clusterVersion(t, n1); got != v {
		t.Errorf("kubeadm-config says kubernetesVersion %q, want %s", got, v)
	}
	p.mark(t, "apply")

	r = runWithin(t, 5*time.Minute, n2, "kubeadm", "upgrade", "node", "--config", cfg)
	if r.Code != 0 {
		t.Fatalf("upgrade node on node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	checkMaxPods(t, n2, "120")
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 2*time.Minute)
		noTempFiles(t, n.HostPath("/etc/kubernetes"))
	}
	p.mark(t, "upgrade node")
	failed, total := p.stop(t)
	t.Logf("Service probes during the re-apply: %d failed of %d", failed, total)
}
