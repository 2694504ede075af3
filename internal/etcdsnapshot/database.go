package etcdsnapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/client/pkg/v3/types"
)

// The parts of etcd's bbolt database this package reads or rewrites: the
// bucket of keys (named by revision), the bucket of the server's own
// records, and the buckets of the cluster and its members.
var (
	keyBucket            = []byte("key")
	metaBucket           = []byte("meta")
	clusterBucket        = []byte("cluster")
	membersBucket        = []byte("members")
	membersRemovedBucket = []byte("members_removed")

	consistentIndexKey = []byte("consistent_index")
	termKey            = []byte("term")
)

// revisionBytes is the size of the main revision at the start of every key
// of the key bucket (big-endian), which is followed by '_' and the
// sub-revision.
const revisionBytes = 8

// openTimeout bounds the wait for the database's file lock: a member that
// still runs on the file holds it.
const openTimeout = 5 * time.Second

// readRevision returns the newest revision in the etcd database at path,
// opened read-only.
func readRevision(path string) (int64, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var rev int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(keyBucket)
		if b == nil {
			return nil // a database no key was ever written to
		}
		k, _ := b.Cursor().Last()
		if k == nil {
			return nil
		}
		if len(k) < revisionBytes {
			return fmt.Errorf("a key of %d bytes in the %q bucket, not a revision", len(k), keyBucket)
		}
		rev = int64(binary.BigEndian.Uint64(k[:revisionBytes]))
		return nil
	})
	return rev, err
}

// adoptDatabase makes the etcd database at path the state of a new
// cluster whose only member is id, recorded as record (the member's JSON):
// the former members (current and removed) are dropped, the member is
// recorded, and the raft index and term the data stands at are set to
// those of the new cluster's log (index and term), so that the member
// applies every entry of that log.
func adoptDatabase(path string, id types.ID, record []byte, index, term uint64) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{membersBucket, membersRemovedBucket} {
			if tx.Bucket(name) != nil {
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
		}
		members, err := tx.CreateBucket(membersBucket)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket(membersRemovedBucket); err != nil {
			return err
		}
		// etcd makes the cluster bucket along with the member buckets.
		if _, err := tx.CreateBucketIfNotExists(clusterBucket); err != nil {
			return err
		}
		// etcd names a member's record by its ID in hexadecimal.
		if err := members.Put([]byte(id.String()), record); err != nil {
			return err
		}
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		if err := meta.Put(consistentIndexKey, binary.BigEndian.AppendUint64(nil, index)); err != nil {
			return err
		}
		return meta.Put(termKey, binary.BigEndian.AppendUint64(nil, term))
	})
	return errors.Join(err, db.Close())
}
