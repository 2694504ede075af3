package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/rootless"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// TestRootless makes a control plane that runs as users of its own (the
// RootlessControlPlane feature gate): init adds the users to this
// machine's /etc/passwd and /etc/group (the test bed's nodes share them
// with the host), etcd and the control-plane components come up and their
// processes run as those users, and reset removes the accounts again.
func TestRootless(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the accounts are checked and removed with this kubeadm's own package")
	}
	// The test bed first: it skips the test where there is none, so that
	// go test -short never removes the accounts of a cluster running here.
	n, _ := singleNode(t, "e2erl")
	if present, err := rootless.Present("/etc"); err != nil || present {
		t.Fatalf("this machine already has a rootless control plane's accounts (%v)", err)
	}
	// Whatever happens, the host keeps no account of the test.
	t.Cleanup(func() { _ = rootless.Remove("/etc") })

	cfg := filepath.Join(n.Dir, "rootless.yaml")
	writeFile(t, cfg, editInitConfig(t, n, [][2]string{{"kind: ClusterConfiguration\n", "kind: ClusterConfiguration\nfeatureGates:\n  RootlessControlPlane: true\n"}}))
	r := run(t, n, "kubeadm", "init", "--config", cfg, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	accounts, err := rootless.Lookup("/etc")
	if err != nil || accounts == nil {
		t.Fatalf("the accounts after init: %v, %v", accounts, err)
	}
	nodeReady(t, n, n.Name, 90*time.Second)

	for _, c := range []struct{ component, process string }{
		{staticpod.Etcd, "etcd"}, {staticpod.KubeAPIServer, "kube-apiserver"},
		{staticpod.KubeControllerManager, "kube-controller-manager"}, {staticpod.KubeScheduler, "kube-scheduler"},
	} {
		ids, _ := accounts.For(c.component)
		eventually(t, 60*time.Second, c.process+" running as its own user", func() error {
			uids, err := processUIDs(c.process)
			if err != nil {
				return err
			}
			for _, uid := range uids {
				if uid == ids.UID {
					return nil
				}
			}
			return fmt.Errorf("%s runs as %v, want %d", c.process, uids, ids.UID)
		})
	}
	// The API server answers (it reads its keys as kubeadm-kas) and the
	// controller manager signs (it reads the CA key as kubeadm-kcm).
	if got := kubectl(t, n, "get", "--raw", "/readyz"); got != "ok" {
		t.Errorf("/readyz: %q", got)
	}
	eventually(t, 60*time.Second, "a Node pod range, assigned by the controller manager", func() error {
		if cidr := kubectlTry(t, n, "get", "node", n.Name, "-o", "jsonpath={.spec.podCIDR}"); cidr.err != nil || cidr.out == "" {
			return fmt.Errorf("no pod range yet (%v)", cidr.err)
		}
		return nil
	})

	if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
		t.Fatalf("reset: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	} else if !strings.Contains(r.Stdout, "Removing the users and groups of the rootless control plane") {
		t.Errorf("reset did not say it removed the accounts:\n%s", r.Stdout)
	}
	if present, err := rootless.Present("/etc"); err != nil || present {
		t.Errorf("the accounts are still there after reset (%v)", err)
	}
}

// processUIDs returns the real user IDs of the processes named name.
func processUIDs(name string) ([]int64, error) {
	comm := name
	if len(comm) > 15 { // the kernel keeps 15 bytes of a command's name
		comm = comm[:15]
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var uids []int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		got, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(got)) != comm {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if uid, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					uids = append(uids, uid)
				}
			}
		}
	}
	if len(uids) == 0 {
		return nil, fmt.Errorf("no %s process", name)
	}
	return uids, nil
}
