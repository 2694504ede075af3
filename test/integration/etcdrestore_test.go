package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/etcd/etcdtest"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// TestEtcdSnapshotRestoreThreeMembers is the disaster the restore command
// is for. A three-member etcd cluster (the control plane's member and two
// more that joined as control-plane nodes join) holds data written
// through each member; "kubeadm etcd snapshot save" saves it on the first
// node. The restore is refused while the cluster has three members; once
// the two others are gone, "kubeadm etcd snapshot restore --force" brings
// the first node back with the snapshot's data, and the cluster takes
// writes and grows again.
//
// Along the way the data folder is compared with what "etcdutl snapshot
// restore" makes of the same snapshot: the same content (database, log,
// raft snapshot), the same member and cluster IDs, and etcd starts from
// either.
func TestEtcdSnapshotRestoreThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs real etcd members")
	}
	etcdutl := etcdutlBinary(t)
	cp := controlplane.Start(t, controlplane.Options{EtcdOnly: true})
	ctx := testContext(t, 8*time.Minute)
	name := controlplane.DefaultNodeName
	addr := cp.AdvertiseAddress().String()
	firstClient := "https://" + net.JoinHostPort(addr, "2379")
	firstPeer := "https://" + net.JoinHostPort(addr, "2380")
	first := snapshotEtcdConfig(cp, firstClient)
	c := etcdClient(t, cp, []string{firstClient}, time.Minute)

	// Three members, each joined as a learner and promoted.
	nodes := []*etcdNode{
		etcdNewNode(t, cp, "restore-cp2", "10.199.0.3", "etcd2"),
		etcdNewNode(t, cp, "restore-cp3", "10.199.0.4", "etcd3"),
	}
	var procs []*etcdProcess
	for _, n := range nodes {
		procs = append(procs, etcdJoin(ctx, t, c, n))
	}
	endpoints := []string{firstClient, nodes[0].clientURL(), nodes[1].clientURL()}
	if err := etcdClient(t, cp, endpoints, time.Minute).CheckHealth(ctx); err != nil {
		t.Fatalf("CheckHealth of the three members: %v", err)
	}
	members, err := c.Members(ctx)
	if err != nil || len(members) != 3 {
		t.Fatalf("members: %v, %v; want three", members, err)
	}
	want := map[string]int{"after/": 0}
	for i, ep := range endpoints {
		prefix := fmt.Sprintf("data/%d/", i)
		snapshotPut(ctx, t, snapshotEtcdConfig(cp, ep), prefix, 20)
		want[prefix] = 20
	}

	snapshotFollowManifest(t, cp)
	out, err := cp.KubeadmCommand("etcd", "snapshot", "save").CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm etcd snapshot save: %v\n%s", err, out)
	}
	t.Logf("kubeadm etcd snapshot save:\n%s", out)
	m := regexp.MustCompile(`to (/etc/kubernetes/tmp/kubeadm-etcd-snapshot-[0-9-]+/snapshot\.db):`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("save printed no snapshot path:\n%s", out)
	}
	path := string(m[1])
	snapshotPut(ctx, t, first, "after/", 3)

	out, err = cp.KubeadmCommand("etcd", "snapshot", "restore", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the etcd cluster has 3 members") {
		t.Fatalf("kubeadm etcd snapshot restore in a cluster of three = %v, want a refusal naming the members\n%s", err, out)
	}
	if backups, _ := filepath.Glob(cp.HostPath("/etc/kubernetes/tmp/kubeadm-etcd-restore-*")); len(backups) != 0 {
		t.Errorf("the refused restore left %v", backups)
	}

	// etcdutl's restore of the snapshot, and the package's, side by side.
	ref := cp.HostPath("/var/lib/etcd-by-etcdutl")
	cmd := exec.Command(etcdutl, "snapshot", "restore", cp.HostPath(path), "--data-dir", ref,
		"--name", name, "--initial-cluster", name+"="+firstPeer, "--initial-advertise-peer-urls", firstPeer)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	ours := filepath.Join(t.TempDir(), "etcd")
	err = etcd.Restore(ctx, etcd.RestoreOptions{Snapshot: cp.HostPath(path), DataDir: ours, Name: name, PeerURLs: []string{firstPeer}})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if diff := cmp.Diff(etcdtest.DataDump(t, ref), etcdtest.DataDump(t, ours)); diff != "" {
		t.Errorf("restored data folder differs from etcdutl's (-etcdutl +ours):\n%s", diff)
	}
	for _, f := range []string{"member/wal/0000000000000000-0000000000000000.wal", "member/snap/0000000000000001-0000000000000001.snap"} {
		a, errA := os.ReadFile(filepath.Join(ref, f))
		b, errB := os.ReadFile(filepath.Join(ours, f))
		if err := errors.Join(errA, errB); err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from etcdutl's (%v)", f, err)
		}
	}
	refMember, refCluster := etcdtest.WALIDs(t, ref)
	t.Logf("etcdutl's restore: member %x, cluster %x", refMember, refCluster)

	// The cluster is lost: the other members are gone.
	for _, p := range procs {
		p.stop()
	}
	// The member's data folder is a mount point (etcd on a disk of its
	// own): the restore keeps the folder and builds the data in it.
	unmount := etcdtest.BindMount(t, cp.HostPath("/var/lib/etcd"))
	began := time.Now()
	out, err = cp.KubeadmCommand("etcd", "snapshot", "restore", path, "--force").CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm etcd snapshot restore --force: %v\n%s", err, out)
	}
	t.Logf("kubeadm etcd snapshot restore --force (%v):\n%s", time.Since(began).Round(time.Millisecond), out)
	if !strings.Contains(string(out), "is a mount point: moved its content to") {
		t.Errorf("the restore did not say it kept the mount point:\n%s", out)
	}
	snapshotExpect(ctx, t, first, want)
	etcdExpectIDs(ctx, t, first, refMember, refCluster)
	snapshotPut(ctx, t, first, "restored/", 5)
	if n := etcdCount(ctx, t, first, "restored/", false); n != 5 {
		t.Errorf("%d keys under restored/, want 5", n)
	}
	unmount() // the swap below renames the folder

	// etcd starts from etcdutl's folder as well, with the same IDs.
	etcdSwapDataDir(ctx, t, cp, ref)
	want["restored/"] = 0
	snapshotExpect(ctx, t, first, want)
	etcdExpectIDs(ctx, t, first, refMember, refCluster)
	snapshotPut(ctx, t, first, "on-etcdutl-data/", 2)

	// The restored cluster grows again: the second node, its data
	// emptied as kubeadm reset does, joins it.
	if err := os.RemoveAll(nodes[0].dataDir()); err != nil {
		t.Fatal(err)
	}
	etcdJoin(ctx, t, c, nodes[0])
	members, err = c.Members(ctx)
	if err != nil || len(members) != 2 {
		t.Fatalf("members after the second node joined the restored cluster: %v, %v; want two", members, err)
	}
	snapshotPut(ctx, t, first, "grown/", 4)
	second := snapshotEtcdConfig(cp, nodes[0].clientURL())
	for prefix, n := range map[string]int64{"grown/": 4, "data/2/": 20, "on-etcdutl-data/": 2, "after/": 0} {
		var got int64
		eventually(ctx, t, "the second node's copy of "+prefix, func() error {
			if got = etcdCount(ctx, t, second, prefix, true); got != n {
				return fmt.Errorf("%d keys, want %d", got, n)
			}
			return nil
		})
	}
}

// etcdutlBinary is etcdutl of the etcd version the control plane runs, as
// hack/build-upstream.sh builds it.
func etcdutlBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", ".cache", "upstream", "etcd-"+controlplane.EtcdVersion, "etcdutl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("etcdutl is not built (%v); run hack/build-upstream.sh etcdutl", err)
		if os.Getenv(controlplane.IntegrationEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// etcdJoin adds node's member to the cluster c reaches as a learner,
// starts its etcd and promotes it, as joining a control-plane node does.
func etcdJoin(ctx context.Context, t *testing.T, c *etcd.Client, n *etcdNode) *etcdProcess {
	t.Helper()
	learner, members, err := c.AddLearner(ctx, n.name, n.peerURL())
	if err != nil {
		t.Fatalf("AddLearner %s: %v", n.name, err)
	}
	p := n.start(t, etcd.InitialCluster(members, n.name, n.peerURL()))
	promoteCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-promoteCtx.Done():
		}
	}()
	if _, err := c.PromoteLearner(promoteCtx, learner.ID); err != nil {
		t.Fatalf("PromoteLearner %s: %v\nlast lines of its etcd's log:\n%s", n.name, err, p.tail())
	}
	return p
}

// etcdCount counts the keys under prefix, through cfg's first endpoint;
// serializable reads that member's own copy.
func etcdCount(ctx context.Context, t *testing.T, cfg etcd.Config, prefix string, serializable bool) int64 {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
	if serializable {
		opts = append(opts, clientv3.WithSerializable())
	}
	callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	resp, err := snapshotClient(t, cfg).Get(callCtx, prefix, opts...)
	if err != nil {
		t.Fatalf("counting the keys under %s at %s: %v", prefix, cfg.Endpoints[0], err)
	}
	return resp.Count
}

// etcdExpectIDs checks the member and cluster IDs of the member at cfg's
// first endpoint.
func etcdExpectIDs(ctx context.Context, t *testing.T, cfg etcd.Config, member, cluster uint64) {
	t.Helper()
	callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	st, err := snapshotClient(t, cfg).Status(callCtx, cfg.Endpoints[0])
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if st.Header.MemberId != member || st.Header.ClusterId != cluster {
		t.Errorf("the member runs as member %x of cluster %x, want %x of %x", st.Header.MemberId, st.Header.ClusterId, member, cluster)
	}
}

// etcdSwapDataDir replaces the control plane's etcd data folder with dir,
// the way an operator does it: the manifest is moved away (the kubelet
// stand-in stops etcd), the folders are swapped, the manifest comes back.
func etcdSwapDataDir(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, dir string) {
	t.Helper()
	manifest := cp.HostPath("/etc/kubernetes/manifests/etcd.yaml")
	parked := cp.HostPath("/etc/kubernetes/etcd.yaml.parked")
	if err := os.Rename(manifest, parked); err != nil {
		t.Fatal(err)
	}
	client := net.JoinHostPort(cp.AdvertiseAddress().String(), "2379")
	eventually(ctx, t, "etcd stops", func() error {
		conn, err := cp.DialContext(ctx, "tcp", client)
		if err != nil {
			return nil
		}
		conn.Close()
		return errors.New("etcd still answers")
	})
	data := cp.HostPath("/var/lib/etcd")
	if err := os.Rename(data, data+".restored-by-kubeadm"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, data); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(parked, manifest); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, "etcd answers on etcdutl's data", func() error {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := snapshotClient(t, snapshotEtcdConfig(cp, "https://"+client)).Get(callCtx, "health", clientv3.WithCountOnly())
		return err
	})
}
