package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestHostProcessPatchUpgrade upgrades a cluster of host processes
// (hostProcessUpgrade) by one patch release, testbed.PatchFromVersion to
// testbed.UpgradeFromVersion. Our kubeadm chooses the same etcd
// (testbed.EtcdVersion) for both, so only the API server, controller
// manager and scheduler move to their versioned programs and etcd keeps
// its unit. The API server is at the new version, the nodes are Ready, a
// Pod on the worker resolves the kubernetes Service through the cluster's
// DNS, and reset leaves both nodes as they were before init.
func TestHostProcessPatchUpgrade(t *testing.T) {
	if otherKubeadm() {
		t.Skip("a control plane of host processes is ours only")
	}
	longTest(t, "3 minutes, and a few more for the first build of the older releases")
	from, to := requirePatchToolchains(t)
	// Our kubeadm deploys its own CoreDNS at any version; the test bed
	// builds it with the current release's images.
	var coreDNS []string
	for _, a := range requireToolchain(t).Archives {
		if strings.Contains(filepath.Base(a), "coredns") {
			coreDNS = append(coreDNS, a)
		}
	}
	u := setUpHostProcessUpgrade(t, "e2ehpp", from, to, testbed.EtcdVersion, testbed.EtcdVersion, coreDNS)
	n1, newV := u.n1, u.newV

	t.Run("apply", func(t *testing.T) {
		etcdUnit := readFile(t, filepath.Join(u.unitDir, "etcd.service"))
		// This kubeadm is of the next minor release: a target of the one
		// before is a skew to force, as upstream's; with --config, by the
		// configuration's forceUpgrade (the flag may not be mixed with it).
		writeFile(t, u.upgradeCfg, forcedUpgradeConfiguration("2m"))
		r := runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", newV, "--yes", "--config", u.upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply %s: exit %d\n%s\n%s", newV, r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("upgrade apply %s → %s took %v", u.oldV, newV, r.Took.Round(100*time.Millisecond))
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(l, "upgraded and healthy after") || strings.Contains(l, "[upgrade/etcd]") {
				t.Log(l)
			}
		}
		if !strings.Contains(r.Stdout, "[upgrade] SUCCESS! A control plane node of your cluster was upgraded to \""+newV+"\".") {
			t.Errorf("no success line:\n%s", r.Stdout)
		}
		for _, p := range hostProcessPrograms {
			unit := readFile(t, filepath.Join(u.unitDir, p+".service"))
			if !strings.Contains(unit, "ExecStart="+u.versioned[p]+" \\\n") {
				t.Errorf("the unit of %s does not run %s:\n%s", p, u.versioned[p], unit)
			}
			if got := strings.TrimSpace(mustRun(t, n1, "systemctl", "is-active", p)); got != "active" {
				t.Errorf("%s.service is %q", p, got)
			}
		}
		if got := readFile(t, filepath.Join(u.unitDir, "etcd.service")); got != etcdUnit {
			t.Errorf("the unit of etcd changed:\n%s\nwas:\n%s", got, etcdUnit)
		}
		if status := etcdStatus(t, n1); !strings.Contains(status, ", "+u.newEtcd+", ") {
			t.Errorf("etcd is not at %s: %s", u.newEtcd, status)
		}
		if out := kubectl(t, n1, "version", "-o", "json"); !strings.Contains(out, `"gitVersion": "`+newV+`"`) {
			t.Errorf("the API server is not at %s:\n%s", newV, out)
		}
		checkKubeProxy(t, n1, u.to)
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("the nodes are Ready and a Pod resolves the kubernetes Service", func(t *testing.T) {
		for _, n := range u.nodes {
			nodeReady(t, n1, n.Name, 2*time.Minute)
		}
		if out := kubectl(t, n1, "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("/readyz: %q", out)
		}
		available(t, n1, "coredns", 3*time.Minute)
		startResolver(t, n1, "500ms")
		resolverAnswers(t, n1)
	})

	t.Run("reset leaves the nodes as before", func(t *testing.T) {
		for _, n := range []*testbed.Node{u.n2, n1} {
			// The upgrade's backups are in /etc/kubernetes/tmp, which
			// reset keeps unless told, as upstream's.
			if r := run(t, n, "kubeadm", "reset", "--force", "--cleanup-tmp-dir"); r.Code != 0 {
				t.Fatalf("reset %s: exit %d\n%s%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
			if d := diffDigests(u.before[n.Name], nodeFiles(t, n)); len(d) > 0 {
				t.Errorf("after reset, %s differs in: %v", n.Name, d)
			}
		}
		for _, p := range hostProcessPrograms {
			if r := run(t, n1, "systemctl", "status", p); r.Code != 4 {
				t.Errorf("after reset, systemctl status %s: exit %d, want 4 (no such unit)\n%s", p, r.Code, r.Stdout)
			}
		}
		if out := mustRun(t, n1, "ps", "-e", "-o", "comm="); strings.Contains(out, "kube-apiserver") || strings.Contains(out, "etcd\n") {
			t.Errorf("control-plane processes still run after reset:\n%s", out)
		}
	})
	t.Logf("the whole test: %v", time.Since(u.start).Round(time.Second))
}
