package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// TestEtcdSnapshot saves and restores the data of a real etcd run from our
// manifest: first with the etcd package (the test stops and starts
// etcd), then with "kubeadm etcd snapshot save" and "restore" (a stand-in
// for the kubelet follows the etcd manifest). Each time, keys written
// before the snapshot are back after the restore and keys written after it
// are gone.
func TestEtcdSnapshot(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{EtcdOnly: true})
	ctx := testContext(t, 5*time.Minute)
	addr := cp.AdvertiseAddress().String()
	cfg := snapshotEtcdConfig(cp, "https://"+net.JoinHostPort(addr, "2379"))
	peerURL := "https://" + net.JoinHostPort(addr, "2380")

	t.Run("package", func(t *testing.T) {
		rev := snapshotPut(ctx, t, cfg, "before/", 3)
		path := filepath.Join(t.TempDir(), "backups", "snapshot.db")
		info, err := etcd.Save(ctx, cfg, path, time.Now)
		if err != nil {
			t.Fatalf("Save: %v", err)
		}
		t.Logf("saved %+v", *info)
		if info.Path != path || info.Member != controlplane.DefaultNodeName || info.Revision != rev || info.Size <= 0 {
			t.Errorf("Save = %+v, want path %s, member %s, revision %d", *info, path, controlplane.DefaultNodeName, rev)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || fi.Size() != info.Size {
			t.Errorf("snapshot file: mode %v, size %d; want 0600, %d", fi.Mode().Perm(), fi.Size(), info.Size)
		}
		if _, err := etcd.Save(ctx, cfg, path, time.Now); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("Save over the snapshot = %v, want a refusal", err)
		}
		snapshotPut(ctx, t, cfg, "after/", 2)

		if err := cp.StopComponent("etcd"); err != nil {
			t.Fatal(err)
		}
		dataDir := cp.HostPath("/var/lib/etcd")
		opts := etcd.RestoreOptions{Snapshot: path, DataDir: dataDir, Name: controlplane.DefaultNodeName, PeerURLs: []string{peerURL}}
		if err := etcd.Restore(ctx, opts); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("Restore over the member's data = %v, want a refusal", err)
		}
		if err := os.Rename(dataDir, dataDir+".old"); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if err := etcd.Restore(ctx, opts); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		t.Logf("restored in %v", time.Since(began).Round(time.Millisecond))
		if err := cp.StartComponent(ctx, "etcd"); err != nil {
			t.Fatalf("etcd on the restored data: %v", err)
		}
		snapshotExpect(ctx, t, cfg, map[string]int{"before/": 3, "after/": 0})
	})
	if t.Failed() {
		return
	}

	t.Run("commands", func(t *testing.T) {
		snapshotPut(ctx, t, cfg, "cli-before/", 2)
		out, err := cp.KubeadmCommand("etcd", "snapshot", "save").CombinedOutput()
		if err != nil {
			t.Fatalf("kubeadm etcd snapshot save: %v\n%s", err, out)
		}
		t.Logf("kubeadm etcd snapshot save:\n%s", out)
		m := regexp.MustCompile(`to (/etc/kubernetes/tmp/kubeadm-etcd-snapshot-[0-9-]+/snapshot\.db): (\d+) bytes, revision (\d+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("save printed no snapshot path, size and revision:\n%s", out)
		}
		path := string(m[1])
		fi, err := os.Stat(cp.HostPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if size, _ := strconv.ParseInt(string(m[2]), 10, 64); size != fi.Size() || fi.Mode().Perm() != 0o600 {
			t.Errorf("snapshot file: size %d, mode %v; the command said %d bytes, want mode 0600", fi.Size(), fi.Mode().Perm(), size)
		}
		snapshotPut(ctx, t, cfg, "cli-after/", 2)

		snapshotFollowManifest(t, cp)
		out, err = cp.KubeadmCommand("etcd", "snapshot", "restore", path).CombinedOutput()
		if err != nil {
			t.Fatalf("kubeadm etcd snapshot restore: %v\n%s", err, out)
		}
		t.Logf("kubeadm etcd snapshot restore:\n%s", out)
		snapshotExpect(ctx, t, cfg, map[string]int{"before/": 3, "after/": 0, "cli-before/": 2, "cli-after/": 0})
		backups, err := filepath.Glob(cp.HostPath("/etc/kubernetes/tmp/kubeadm-etcd-restore-*"))
		if err != nil || len(backups) != 1 {
			t.Fatalf("backup folders %v (%v), want one", backups, err)
		}
		for _, f := range []string{"etcd.yaml", "etcd-data/member/snap/db"} {
			if _, err := os.Stat(filepath.Join(backups[0], f)); err != nil {
				t.Errorf("backup: %v", err)
			}
		}
	})
}

// snapshotEtcdConfig reaches the control plane's etcd at endpoint with the
// etcd health-check client certificate, dialing inside the namespace.
func snapshotEtcdConfig(cp *controlplane.ControlPlane, endpoint string) etcd.Config {
	pki := cp.HostPath("/etc/kubernetes/pki/etcd")
	return etcd.Config{
		Endpoints:    []string{endpoint},
		CAFile:       filepath.Join(pki, "ca.crt"),
		CertFile:     filepath.Join(pki, "healthcheck-client.crt"),
		KeyFile:      filepath.Join(pki, "healthcheck-client.key"),
		DialTimeout:  5 * time.Second,
		CallTimeout:  10 * time.Second,
		RetryTimeout: time.Minute,
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			return cp.DialContext(ctx, "tcp", addr)
		},
	}
}

// snapshotClient is etcd's own client (an independent one: the product
// has its own) with cfg's endpoints, certificates and dialer, closed at the
// end of the test.
func snapshotClient(t *testing.T, cfg etcd.Config) *clientv3.Client {
	t.Helper()
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", cfg.CAFile)
	}
	pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		DialTimeout: cfg.DialTimeout,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(cfg.Dial)},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// snapshotPut writes n keys under prefix and returns the store revision
// after the last one.
func snapshotPut(ctx context.Context, t *testing.T, cfg etcd.Config, prefix string, n int) int64 {
	t.Helper()
	c := snapshotClient(t, cfg)
	var rev int64
	for i := range n {
		callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
		resp, err := c.Put(callCtx, fmt.Sprintf("%s%d", prefix, i), "value")
		cancel()
		if err != nil {
			t.Fatalf("put %s%d: %v", prefix, i, err)
		}
		rev = resp.Header.Revision
	}
	return rev
}

// snapshotExpect checks, with a fresh client, how many keys each prefix
// has and that the cluster has the one member.
func snapshotExpect(ctx context.Context, t *testing.T, cfg etcd.Config, want map[string]int) {
	t.Helper()
	c := snapshotClient(t, cfg)
	for prefix, n := range want {
		var got int64
		eventually(ctx, t, "counting the keys under "+prefix, func() error {
			callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
			defer cancel()
			resp, err := c.Get(callCtx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return err
			}
			got = resp.Count
			return nil
		})
		if got != int64(n) {
			t.Errorf("%d keys under %s after the restore, want %d", got, prefix, n)
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, cfg.CallTimeout)
	defer cancel()
	members, err := c.MemberList(callCtx)
	if err != nil {
		t.Fatalf("member list: %v", err)
	}
	if len(members.Members) != 1 || members.Members[0].Name != controlplane.DefaultNodeName {
		t.Errorf("members after the restore: %v, want only %s", members.Members, controlplane.DefaultNodeName)
	}
}

// snapshotFollowManifest plays the kubelet for the etcd manifest until the
// test ends: etcd is stopped when the manifest is gone and started again
// when it is back.
func snapshotFollowManifest(t *testing.T, cp *controlplane.ControlPlane) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	manifest := cp.HostPath("/etc/kubernetes/manifests/etcd.yaml")
	go func() {
		defer close(done)
		running := true
		for {
			_, err := os.Stat(manifest)
			present := err == nil
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("kubelet stand-in: %v", err)
				return
			}
			switch {
			case running && !present:
				if err := cp.StopComponent("etcd"); err != nil {
					t.Errorf("kubelet stand-in: %v", err)
					return
				}
				running = false
			case !running && present:
				if err := cp.StartComponent(ctx, "etcd"); err != nil {
					if ctx.Err() == nil {
						t.Errorf("kubelet stand-in: %v", err)
					}
					return
				}
				running = true
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
