package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestKubeDNSPatchUpgrade upgrades a cluster whose DNS addon is kube-dns
// by one patch release (testbed.PatchFromVersion to
// testbed.UpgradeFromVersion): a control-plane node and a worker made by
// our kubeadm with the CoreDNS gate off, then "upgrade apply". The
// control plane is at the new version, kube-dns is still the addon (no
// CoreDNS Deployment appears), the kube-dns Service keeps its ClusterIP,
// and a Pod on the worker resolves the kubernetes Service through it.
func TestKubeDNSPatchUpgrade(t *testing.T) {
	if otherKubeadm() {
		t.Skip("kube-dns is ours only (upstream removed it in v1.21)")
	}
	longTest(t, "4 minutes, and a few more for the first build of the older releases")
	from, to := requirePatchToolchains(t)
	oldV, newV := from.KubernetesVersion, to.KubernetesVersion
	var log strings.Builder
	archives, err := to.KubeDNSImages(context.Background(), &log)
	if err != nil {
		t.Fatalf("kube-dns images: %v\n%s", err, log.String())
	}
	resolveArchive, err := to.ResolveImage()
	if err != nil {
		t.Fatal(err)
	}
	c := manageCluster(t, from.UpgradeCluster(to, "e2ednsu", clusterStateDir("e2ednsu"), testWriter{t}))
	c.Archives = append(append(c.Archives, archives...), resolveArchive)
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
	// etcd at the older release's version: the test bed has no other
	// image of it (our kubeadm's choice for an older release is newer).
	etcdTag := strings.TrimPrefix(testbed.UpgradeFromEtcdVersion, "v") + "-0"
	writeFile(t, cfg, strings.Replace(testbed.InitConfig(n1, oldV, ""), "networking:\n",
		"featureGates:\n  CoreDNS: false\netcd:\n  local:\n    imageTag: "+etcdTag+"\nnetworking:\n", 1))
	start := initWithWorker(t, n1, n2, cfg, oldV)
	nodeReady(t, n1, "node1", 90*time.Second)
	nodeReady(t, n1, "node2", 90*time.Second)
	available(t, n1, "kube-dns", 3*time.Minute)
	t.Logf("a cluster at %s with kube-dns: %v", oldV, time.Since(start).Round(time.Second))
	svc := func() string {
		return kubectl(t, n1, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.metadata.uid} {.spec.clusterIP}")
	}
	svcBefore := svc()

	upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
	// A target a minor version below kubeadm's own is a skew upgrade
	// apply refuses unless forced, as upstream's does; with --config the
	// force is the configuration's (the flag may not be mixed with it).
	writeFile(t, upgradeCfg, forcedUpgradeConfiguration("2m"))
	r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", upgradeCfg)
	if r.Code != 0 {
		t.Fatalf("upgrade apply %s: exit %d\n%s\n%s", newV, r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("upgrade apply %s → %s took %v", oldV, newV, r.Took.Round(100*time.Millisecond))
	if !strings.Contains(r.Stdout, "[upgrade] SUCCESS! A control plane node of your cluster was upgraded to \""+newV+"\".") {
		t.Errorf("no success line:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "Applied essential addon: kube-dns") {
		t.Errorf("the upgrade did not apply kube-dns:\n%s", r.Stdout)
	}
	if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+newV+`"`) {
		t.Errorf("the API server is not at %s:\n%s", newV, out)
	}
	available(t, n1, "kube-dns", 2*time.Minute)
	if r := kubectlTry(t, n1, "-n", "kube-system", "get", "deployment", "coredns"); r.err == nil {
		t.Errorf("the upgrade made a CoreDNS Deployment beside kube-dns")
	}
	if got := svc(); got != svcBefore {
		t.Errorf("after the upgrade the kube-dns Service is %q, was %q", got, svcBefore)
	}
	startResolver(t, n1, "100ms")
	resolverAnswers(t, n1)
}
