package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v2store"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// The prefixes under which etcd keeps the cluster's membership in its
// version 2 store, which a raft snapshot carries.
const (
	v2ClusterPrefix = "/0"
	v2KeysPrefix    = "/1"
)

// buildDataDir lays out, in the empty folder dir, the data folder of a new
// etcd cluster whose only member is o's and whose data is the database in
// the snapshot file (of size bytes, digest included and already checked):
//
//	member/snap/db                the database, taken over by the new cluster
//	member/snap/<term>-<index>.snap  a raft snapshot of the membership
//	member/wal/0-0.wal            a log that starts the cluster: the member's
//	                              addition, committed, and that snapshot
//
// This is what etcdutl's snapshot restore makes (and what etcd itself
// makes when it bootstraps a cluster): the member and cluster IDs are
// derived from the member's name, peer URLs and the cluster token as etcd
// derives them, so the member's flags (--initial-cluster and
// --initial-cluster-token) match the data.
func buildDataDir(snapshotPath string, size int64, dir string, o RestoreOptions, token string) (err error) {
	initial := make([]string, 0, len(o.PeerURLs))
	for _, u := range o.PeerURLs {
		initial = append(initial, o.Name+"="+u)
	}
	urls, err := types.NewURLsMap(strings.Join(initial, ","))
	if err != nil {
		return err
	}
	lg := zap.NewNop()
	cluster, err := membership.NewClusterFromURLsMap(lg, token, urls)
	if err != nil {
		return err
	}
	m := cluster.MemberByName(o.Name)
	if m == nil {
		return fmt.Errorf("no member named %q in the new cluster", o.Name)
	}

	memberDir := filepath.Join(dir, "member")
	snapDir := filepath.Join(memberDir, "snap")
	if err := os.MkdirAll(snapDir, DirMode); err != nil {
		return err
	}
	dbPath := filepath.Join(snapDir, "db")
	if err := copyDatabase(snapshotPath, size-sha256.Size, dbPath); err != nil {
		return fmt.Errorf("copying the database: %w", err)
	}

	// The new cluster's log: entry 1, in term 1, adds the member; it is
	// committed, and the member voted for itself.
	const index, term = 1, 1
	memberJSON, err := json.Marshal(m)
	if err != nil {
		return err
	}
	change, err := (&raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: uint64(m.ID), Context: memberJSON}).Marshal()
	if err != nil {
		return err
	}
	entries := []raftpb.Entry{{Type: raftpb.EntryConfChange, Term: term, Index: index, Data: change}}
	state := raftpb.HardState{Term: term, Vote: uint64(m.ID), Commit: index}
	confState := raftpb.ConfState{Voters: []uint64{uint64(m.ID)}}

	if err := adoptDatabase(dbPath, m.ID, memberJSON, index, term); err != nil {
		return fmt.Errorf("making the database the new cluster's: %w", err)
	}

	metadata, err := (&etcdserverpb.Metadata{NodeID: uint64(m.ID), ClusterID: uint64(cluster.ID())}).Marshal()
	if err != nil {
		return err
	}
	w, err := wal.Create(lg, filepath.Join(memberDir, "wal"), metadata)
	if err != nil {
		return fmt.Errorf("creating the write-ahead log: %w", err)
	}
	defer func() {
		// Closing flushes the log's last segment: its error counts.
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	if err := w.Save(state, entries); err != nil {
		return fmt.Errorf("writing the write-ahead log: %w", err)
	}

	// The raft snapshot carries the membership in etcd's version 2 store
	// format, which a member reads back when it starts from the snapshot.
	store := v2store.New(v2ClusterPrefix, v2KeysPrefix)
	cluster.Store(store)
	membershipData, err := store.SaveNoCopy()
	if err != nil {
		return err
	}
	err = snap.New(lg, snapDir).SaveSnap(raftpb.Snapshot{
		Data:     membershipData,
		Metadata: raftpb.SnapshotMetadata{Index: index, Term: term, ConfState: confState},
	})
	if err != nil {
		return fmt.Errorf("writing the raft snapshot: %w", err)
	}
	if err := w.SaveSnapshot(walpb.Snapshot{Index: index, Term: term, ConfState: &confState}); err != nil {
		return fmt.Errorf("writing the write-ahead log: %w", err)
	}
	return nil
}

// copyDatabase copies the database in the snapshot file (its first n
// bytes) to a new file dst and flushes it. The copy is checked against the
// digest that follows the database, so a damaged snapshot, or one that
// changed since a caller checked it, is refused.
func copyDatabase(snapshotPath string, n int64, dst string) (err error) {
	src, err := os.Open(snapshotPath)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(out, h), src, n); err != nil {
		return err
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(src, want); err != nil {
		return err
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return damaged(got, want)
	}
	return out.Sync()
}
