// Package etcdsnapshot backs up the data of a kubeadm cluster's stacked etcd
// into one file and builds a fresh etcd data folder from such a file. It is
// not part of upstream kubeadm, which leaves this to etcdctl and etcdutl.
//
// # The file
//
// A snapshot is what etcd's Maintenance.Snapshot call streams: the member's
// whole bbolt database followed by the SHA-256 digest of that database (32
// bytes). etcd's Go client passes the stream on without looking at the
// digest; Save checks it on the written file before the file gets its
// name, and Check does the same for a file on disk. The file is the one
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
// # Without etcdutl
//
// The data folder Restore builds is the one etcdutl's snapshot restore
// builds: a unit test compares the two, bucket by bucket and log entry by
// log entry, and the write-ahead log and the raft snapshot byte for byte.
// The database is rewritten with bbolt; the log, the raft snapshot and the
// membership's forms (member and cluster IDs, the member's record, the
// version 2 store) are written by this package itself (raftlog.go,
// member.go), not with etcd's server packages (wal, snap, membership,
// v2store, raft): those are not etcd's client library, and their package
// initialisation (protobuf registries, metrics) cost every kubeadm command
// ≈ 2.5 ms at start-up. etcdutl, which links the whole server, is the
// tests' oracle only.
package etcdsnapshot
