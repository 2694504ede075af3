// Package etcdsnapshot backs up the data of a kubeadm cluster's stacked etcd
// into one file and builds a fresh etcd data folder from such a file. It is
// not part of upstream kubeadm, which leaves this to etcdctl and etcdutl.
//
// # The file
//
// A snapshot is what etcd's Maintenance.Snapshot call streams: the member's
// whole bbolt database followed by the SHA-256 digest of that database (32
// bytes). etcd's Go client (go.etcd.io/etcd/client/v3) passes the stream on
// without looking at the digest; Save checks it on the written file before
// the file gets its name, and Check does the same for a file on disk, then
// has etcd's own snapshot status (go.etcd.io/etcd/etcdutl/v3/snapshot, what
// `etcdutl snapshot status` runs) check the database. The file is the one
// etcdctl snapshot save writes, so either tool can restore it.
//
// # Contracts
//
// Save talks to one member only (the first endpoint): a snapshot is that
// member's point-in-time copy. It writes a temporary file next to the
// target, flushes it, checks it, gives it mode 0600 and renames it into
// place; on any failure neither the temporary file nor a file at the
// target is left, and the folders it created are removed again. It never
// replaces an existing file. The transfer is bounded by the caller's
// context and ends when no data came for StallTimeout; every other request
// to etcd is bounded by Config.CallTimeout.
//
// Restore builds the data folder of a new single-member cluster (the
// member keeps its name and peer URLs; the cluster and member IDs are new)
// in a temporary folder next to the target and renames it into place: the
// target is either untouched (on failure) or complete. It refuses a
// target that exists and is not an empty folder. The restore itself cannot
// be interrupted: the context is only looked at before it starts. The
// etcd member must not run on the target while Restore works; stopping and
// starting it is the caller's business.
//
// # etcd's restore
//
// The data folder itself (the database taken over by the new cluster, the
// write-ahead log and the raft snapshot that start it) is built by etcd's
// own restore library, go.etcd.io/etcd/etcdutl/v3/snapshot, with the
// settings `etcdutl snapshot restore` gets from its flags: the result is
// exactly what that command makes, and a new etcd release's format comes
// with the library. What is kubeadm's is around it: the checks before,
// the staging folder and the rename, and turning etcd's panics and fatal
// log lines (a database its storage cannot open) into errors.
package etcdsnapshot
