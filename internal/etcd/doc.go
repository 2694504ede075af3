// Package etcd is kubeadm's one package for etcd: the membership and health
// of the stacked etcd cluster (the members that run as static Pods on the
// control-plane nodes), which joining a control-plane node, resetting one
// and upgrading use, and snapshots: saving a member's data into one file
// and building a fresh data folder from such a file (not part of upstream
// kubeadm, which leaves this to etcdctl and etcdutl).
//
// # Finding the cluster
//
// ClientURLs asks the API server for the etcd static Pods (labels
// component=etcd and tier=control-plane in kube-system) and reads the client
// URL each one advertises in its kubeadm.kubernetes.io/etcd.advertise-client-urls
// annotation. New connects to those URLs with the etcd CA and a client
// certificate, normally the API server's etcd client certificate
// (DefaultCertFiles).
//
// # Adding a member
//
// A new member always starts as a learner: it receives the data but does not
// vote, so a member that never starts cannot cost the cluster its quorum.
// The sequence a joining node follows is
//
//  1. AddLearner(name, peerURL): the member is announced; the answer lists
//     every member.
//  2. InitialCluster(members, name, peerURL) gives the --initial-cluster value
//     of the node's etcd, started with --initial-cluster-state=existing.
//  3. PromoteLearner(id), once that etcd runs: etcd refuses to promote a
//     learner that has not caught up with the leader yet, and the call keeps
//     asking until it has or the retry timeout passes.
//
// Every step can be run again after a failure: AddLearner returns the member
// already announced with the same peer URL, PromoteLearner accepts a member
// that already votes, RemoveMember accepts a member that is already gone.
// AddLearner refuses a started member of the same name but another peer URL:
// that is another machine (or this one before its address changed), which
// must be removed first.
//
// # Several nodes at once
//
// Nodes may join at the same moment; nothing here takes a lock. etcd itself
// serialises them: it accepts one learner at a time ("too many learner
// members") and refuses changes that would leave too few started members for
// a quorum ("unhealthy cluster", "not enough started members"). These
// answers, and transient ones (no leader, leader changed, connection lost, a
// single call timing out), are retried with an exponential back-off until
// Config.RetryTimeout passes, so a second node waits while the first one's
// learner catches up and is promoted. A learner left behind by a join that
// failed for good blocks every later join until it is removed; the timeout
// error then names it.
//
// # etcd's client
//
// Every request goes through etcd's own Go client, go.etcd.io/etcd/client/v3
// (NewV3Client makes it): its balancing between the endpoints, its retries
// of requests that did not reach a member, and its errors, which turn
// etcd's answers into rpctypes.EtcdError values. This package adds
// kubeadm's membership logic on top: which answers mean another join is
// in flight, what to retry and for how long, and the checks that keep a
// step safe to run again.
//
// # Bounds
//
// Every call is bounded by its context, every single request to etcd by
// Config.CallTimeout, every connection attempt by Config.DialTimeout, and
// every retried operation as a whole by Config.RetryTimeout. Nothing here
// waits without a bound.
//
// # Snapshots: the file
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
// target is either untouched (on failure) or complete. An existing empty
// target (a mount point, say, which can be neither replaced nor renamed
// into from another file system) stays, and the staging folder is made
// inside it, its content renamed up. It refuses a target that exists and
// is not an empty folder. The restore itself cannot
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
//
// # The data folder
//
// CopyTree copies a data folder into a new one (an upgrade's backup),
// RestoreTree puts such a copy back (its rollback). A data folder that is
// a mount point cannot be renamed: RestoreTree, and RestoreSnapshot when
// it moves the member's data aside, then move its content instead
// (MoveContent) and keep the folder.
package etcd
