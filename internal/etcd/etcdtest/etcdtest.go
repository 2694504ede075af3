package etcdtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// DataDump describes, as lines of text, what etcd reads from the data
// folder dir: every bucket of the database, the write-ahead log (metadata,
// hard state, entries, snapshots, file names) and the raft snapshot.
func DataDump(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	member := filepath.Join(dir, "member")

	db, err := bolt.Open(filepath.Join(member, "snap", "db"), 0o400, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			out = append(out, fmt.Sprintf("bucket %s", name))
			return b.ForEach(func(k, v []byte) error {
				out = append(out, fmt.Sprintf("  %q = %q", k, v))
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	w, err := wal.OpenForRead(zap.NewNop(), filepath.Join(member, "wal"), &walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	metadata, state, entries, err := w.ReadAll()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("wal metadata %x", metadata), "wal state "+state.String())
	for _, e := range entries {
		out = append(out, "wal entry "+e.String())
	}
	snaps, err := wal.ValidSnapshotEntries(zap.NewNop(), filepath.Join(member, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		out = append(out, "wal snapshot "+s.String())
	}
	names, err := os.ReadDir(filepath.Join(member, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		out = append(out, "wal file "+n.Name())
	}

	s, err := snap.New(zap.NewNop(), filepath.Join(member, "snap")).Load()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, "raft snapshot "+s.Metadata.String())
	out = append(out, strings.Split(string(bytes.TrimSpace(s.Data)), ",")...)
	files, err := os.ReadDir(filepath.Join(member, "snap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		out = append(out, "snap file "+f.Name())
	}
	return out
}

// WALIDs returns the member and cluster IDs the write-ahead log of the
// data folder dir records.
func WALIDs(t testing.TB, dir string) (member, cluster uint64) {
	t.Helper()
	w, err := wal.OpenForRead(zap.NewNop(), filepath.Join(dir, "member", "wal"), &walpb.Snapshot{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	metadata, _, _, err := w.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var md etcdserverpb.Metadata
	if err := proto.Unmarshal(metadata, &md); err != nil {
		t.Fatal(err)
	}
	return md.GetNodeID(), md.GetClusterID()
}

// BindMount makes the folder dir a mount point (a bind mount of itself),
// as a data folder on a disk of its own is, until the test ends or the
// returned function is called: it can then be neither renamed nor
// removed, and its content is the folder's. The test is skipped where
// mounting is not allowed (not root, or no CAP_SYS_ADMIN).
func BindMount(t testing.TB, dir string) (unmount func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a mount point needs root")
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("making a mount point: %v", err)
		}
		t.Fatal(err)
	}
	var once sync.Once
	unmount = func() {
		once.Do(func() {
			// Lazily: a process that still has files open on the mount
			// (etcd) keeps them, and they are the folder's anyway.
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", dir, err)
			}
		})
	}
	t.Cleanup(unmount)
	// The mount point cannot be renamed: the case the test is about.
	if err := os.Rename(dir, dir+".renamed"); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("renaming the mount point %s = %v, want EBUSY", dir, err)
	}
	return unmount
}
