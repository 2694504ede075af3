package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
// --initial-cluster-token) match the data. The log and the snapshot are
// written by raftlog.go, the membership's forms by member.go.
func buildDataDir(snapshotPath string, size int64, dir string, o RestoreOptions, token string) error {
	m, err := memberFor(o.Name, o.PeerURLs, token)
	if err != nil {
		return err
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
	record, err := m.record()
	if err != nil {
		return err
	}
	if err := adoptDatabase(dbPath, m.ID, record, index, term); err != nil {
		return fmt.Errorf("making the database the new cluster's: %w", err)
	}
	voters := confState(uint64(m.ID))

	// The raft snapshot carries the membership in etcd's version 2 store
	// format, which a member reads back when it starts from the snapshot.
	store, err := m.v2StoreJSON()
	if err != nil {
		return err
	}
	if err := writeSnapFile(snapDir, term, index, raftSnapshot(store, voters, index, term)); err != nil {
		return fmt.Errorf("writing the raft snapshot: %w", err)
	}

	// The log as etcd's wal.Create, Save and SaveSnapshot leave it: a CRC
	// record, the metadata (member and cluster IDs), an empty snapshot
	// mark, the entry, the hard state, and the mark of the snapshot above.
	var w walWriter
	w.record(walCrcType, nil)
	w.record(walMetadataType, walMetadata(uint64(m.ID), uint64(m.ClusterID)))
	w.record(walSnapshotType, walSnapshot(0, 0, nil))
	w.record(walEntryType, raftEntry(entryConfChange, term, index, confChange(uint64(m.ID), record)))
	w.record(walStateType, hardState(term, uint64(m.ID), index))
	w.record(walSnapshotType, walSnapshot(index, term, voters))
	if err := w.writeFile(filepath.Join(memberDir, "wal")); err != nil {
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
