package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/etcd/etcdtest"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// etcdFixture is a sound snapshot (see internal/etcd/testdata).
const etcdFixture = "../etcd/testdata/three-keys.db"

// etcdNode is a control-plane node's files in a temporary folder: an etcd
// manifest whose data folder is mounted from <root>/var/lib/etcd (which
// holds one file), and the etcd CA and client certificates.
type etcdNode struct {
	root, manifest, dataDir, certDir string
	env                              etcd.Node
}

func newEtcdNode(t *testing.T, peerURL string, dial func(ctx context.Context, addr string) (net.Conn, error)) *etcdNode {
	t.Helper()
	root := t.TempDir()
	n := &etcdNode{
		root:    root,
		dataDir: filepath.Join(root, "var", "lib", "etcd"),
		certDir: filepath.Join(root, "etc", "kubernetes", "pki"),
		env: etcd.Node{
			KubernetesDir: filepath.Join(root, "etc", "kubernetes"),
			ManifestDir:   filepath.Join(root, "etc", "kubernetes", "manifests"),
			Now:           func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
			Dial:          dial,
			DialTimeout:   100 * time.Millisecond,
			CallTimeout:   200 * time.Millisecond,
			ListTimeout:   300 * time.Millisecond,
			SaveTimeout:   5 * time.Second,
			StopTimeout:   300 * time.Millisecond,
			StartTimeout:  300 * time.Millisecond,
			Poll:          20 * time.Millisecond,
		},
	}
	n.manifest = filepath.Join(n.env.ManifestDir, "etcd.yaml")
	for _, d := range []string{n.env.ManifestDir, filepath.Join(n.dataDir, "member"), filepath.Join(n.certDir, "etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --advertise-client-urls=https://10.0.0.1:2379
    - --data-dir=/var/lib/etcd
    - --initial-advertise-peer-urls=%s
    - --name=cp-1
    volumeMounts:
    - mountPath: /var/lib/etcd
      name: etcd-data
  volumes:
  - hostPath:
      path: %s
    name: etcd-data
`, peerURL, n.dataDir)
	if err := os.WriteFile(n.manifest, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.dataDir, "member", "old"), []byte("old data"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeSelfSigned(t, filepath.Join(n.certDir, "etcd"), "ca")
	writeSelfSigned(t, filepath.Join(n.certDir, "etcd"), "healthcheck-client")
	return n
}

// run runs "kubeadm etcd" with args on the node.
func (n *etcdNode) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newEtcdCmd(Streams{In: strings.NewReader(""), Out: &out, Err: &out}, n.env)
	cmd.SetArgs(append(args, "--cert-dir", n.certDir))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

// copyFixture puts a copy of the fixture snapshot where the restore can
// read it, away from the node's folders.
func copyFixture(t *testing.T, damage bool) string {
	t.Helper()
	data, err := os.ReadFile(etcdFixture)
	if err != nil {
		t.Fatal(err)
	}
	if damage {
		data[1000] ^= 0xff
	}
	p := filepath.Join(t.TempDir(), "snapshot.db")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSelfSigned writes name.crt and name.key, a self-signed pair, with
// the product's own pki functions.
func writeSelfSigned(t *testing.T, dir, name string) {
	t.Helper()
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: name, Validity: time.Hour}, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteCertAndKey(dir, name, cert, key); err != nil {
		t.Fatal(err)
	}
}

// refused is a dialer for a machine where nothing listens.
func refused(ctx context.Context, addr string) (net.Conn, error) {
	return nil, errors.New("connection refused")
}

// answering is a dialer for a port that accepts connections and closes
// them at once.
func answering(ctx context.Context, addr string) (net.Conn, error) {
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

// untouched fails the test unless the manifest and the data folder are
// as newEtcdNode made them.
func (n *etcdNode) untouched(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(n.manifest); err != nil {
		t.Errorf("the etcd manifest: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(n.dataDir, "member", "old")); err != nil || string(data) != "old data" {
		t.Errorf("the member's data: %q, %v", data, err)
	}
}

func TestEtcdSnapshotSaveRefusals(t *testing.T) {
	t.Run("no manifest", func(t *testing.T) {
		n := newEtcdNode(t, "https://10.0.0.1:2380", refused)
		if err := os.Remove(n.manifest); err != nil {
			t.Fatal(err)
		}
		_, err := n.run(t, "snapshot", "save")
		if err == nil || !strings.Contains(err.Error(), "runs no stacked etcd member") {
			t.Fatalf("save = %v, want a refusal for a node without an etcd manifest", err)
		}
	})
	t.Run("member unreachable", func(t *testing.T) {
		n := newEtcdNode(t, "https://10.0.0.1:2380", refused)
		_, err := n.run(t, "snapshot", "save")
		if err == nil || !strings.Contains(err.Error(), "etcd snapshot from https://10.0.0.1:2379") {
			t.Fatalf("save = %v, want an error naming the member's client URL", err)
		}
		if _, err := os.Stat(filepath.Join(n.env.KubernetesDir, "tmp")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the snapshot folder was left behind (%v)", err)
		}
	})
	t.Run("existing output", func(t *testing.T) {
		n := newEtcdNode(t, "https://10.0.0.1:2380", refused)
		out := filepath.Join(n.root, "snapshot.db")
		if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := n.run(t, "snapshot", "save", "--output", out)
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("save = %v, want a refusal to replace the file", err)
		}
		if data, _ := os.ReadFile(out); string(data) != "keep me" {
			t.Errorf("the existing file became %q", data)
		}
	})
}

func TestEtcdSnapshotRestoreRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		snapshot func(t *testing.T) string
		dial     func(ctx context.Context, addr string) (net.Conn, error)
		args     []string
		want     string
	}{
		{"no snapshot given", nil, refused, nil, "accepts 1 arg"},
		{"missing snapshot", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.db") }, refused, nil, "no such file"},
		{"damaged snapshot", func(t *testing.T) string { return copyFixture(t, true) }, refused, []string{"--force"}, "the snapshot is damaged"},
		{"members cannot be listed", func(t *testing.T) string { return copyFixture(t, false) }, refused, nil, "run again with --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newEtcdNode(t, "https://10.0.0.1:2380", tc.dial)
			args := []string{"snapshot", "restore"}
			if tc.snapshot != nil {
				args = append(args, tc.snapshot(t))
			}
			_, err := n.run(t, append(args, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore = %v, want an error containing %q", err, tc.want)
			}
			n.untouched(t)
			if _, err := os.Stat(filepath.Join(n.env.KubernetesDir, "tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a backup folder was made (%v)", err)
			}
		})
	}
}

// TestEtcdSnapshotRestoreMovesFiles runs a forced restore where no etcd
// answers: the kubelet's part is missing, so the member never comes back,
// but every file ends where it should. A data folder that is a mount
// point stays, its content moved aside and the restored data built in it.
func TestEtcdSnapshotRestoreMovesFiles(t *testing.T) {
	for _, mounted := range []bool{false, true} {
		t.Run(map[bool]string{false: "folder", true: "mount point"}[mounted], func(t *testing.T) {
			n := newEtcdNode(t, "https://10.0.0.1:2380", refused)
			if mounted {
				etcdtest.BindMount(t, n.dataDir)
			}
			manifest, err := os.ReadFile(n.manifest)
			if err != nil {
				t.Fatal(err)
			}
			out, err := n.run(t, "snapshot", "restore", copyFixture(t, false), "--force")
			if err == nil || !strings.Contains(err.Error(), "the restored etcd member does not answer") {
				t.Fatalf("restore = %v, want the member not to answer\n%s", err, out)
			}
			backup := filepath.Join(n.env.KubernetesDir, "tmp", "kubeadm-etcd-restore-2026-01-02-03-04-05")
			if data, err := os.ReadFile(filepath.Join(backup, "etcd-data", "member", "old")); err != nil || string(data) != "old data" {
				t.Errorf("the former data in the backup folder: %q, %v", data, err)
			}
			if data, err := os.ReadFile(filepath.Join(backup, "etcd.yaml")); err != nil || !bytes.Equal(data, manifest) {
				t.Errorf("the manifest in the backup folder differs (%v)", err)
			}
			if data, err := os.ReadFile(n.manifest); err != nil || !bytes.Equal(data, manifest) {
				t.Errorf("the manifest put back differs (%v)", err)
			}
			if _, err := os.Stat(filepath.Join(n.dataDir, "member", "snap", "db")); err != nil {
				t.Errorf("the restored data: %v", err)
			}
			if _, err := os.Stat(filepath.Join(n.dataDir, "member", "old")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the former data is still in the data folder (%v)", err)
			}
			for _, line := range []string{"WARNING: the etcd members cannot be listed", "nothing answers at 10.0.0.1:2379", "Restored the snapshot into " + n.dataDir} {
				if !strings.Contains(out, line) {
					t.Errorf("output lacks %q:\n%s", line, out)
				}
			}
		})
	}
}

func TestEtcdSnapshotRestoreUndoes(t *testing.T) {
	for _, tc := range []struct {
		name, peerURL string
		dial          func(ctx context.Context, addr string) (net.Conn, error)
		mounted       bool // the data folder is a mount point
		want          string
	}{
		{"member does not stop", "https://10.0.0.1:2380", answering, false, "10.0.0.1:2379 still answers"},
		{"restore fails", "10.0.0.1:2380", refused, false, "peer URL"},
		{"restore fails on a mount point", "10.0.0.1:2380", refused, true, "peer URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newEtcdNode(t, tc.peerURL, tc.dial)
			if tc.mounted {
				etcdtest.BindMount(t, n.dataDir)
			}
			out, err := n.run(t, "snapshot", "restore", copyFixture(t, false), "--force")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore = %v, want an error containing %q\n%s", err, tc.want, out)
			}
			if !strings.Contains(out, "Put back the etcd manifest and data as they were") {
				t.Errorf("output does not say that the files were put back:\n%s", out)
			}
			n.untouched(t)
			if _, err := os.Stat(filepath.Join(n.dataDir, "member", "snap")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("restored data appeared in the member's folder (%v)", err)
			}
			if names, err := os.ReadDir(filepath.Join(n.env.KubernetesDir, "tmp")); err != nil || len(names) != 0 {
				t.Errorf("backup folders left behind: %v (%v)", names, err)
			}
		})
	}
}

// silent is a dialer for a port that accepts connections and then says
// nothing, not even its part of the TLS handshake, until the test ends.
func silent(t *testing.T) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		a, b := net.Pipe()
		t.Cleanup(func() { b.Close() })
		return a, nil
	}
}

// TestEtcdCommandsGiveUpOnASilentMember: against an etcd member that
// takes the connection and never answers, save and restore fail within
// their call and list timeouts, and change nothing.
func TestEtcdCommandsGiveUpOnASilentMember(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"save", func(*testing.T) []string { return []string{"snapshot", "save"} }, "etcd snapshot from https://10.0.0.1:2379"},
		{"restore", func(t *testing.T) []string { return []string{"snapshot", "restore", copyFixture(t, false)} }, "run again with --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newEtcdNode(t, "https://10.0.0.1:2380", silent(t))
			args := tc.args(t)
			err := withinDeadline(t, 30*time.Second, func() error {
				_, err := n.run(t, args...)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s = %v, want an error containing %q", tc.name, err, tc.want)
			}
			n.untouched(t)
		})
	}
}
