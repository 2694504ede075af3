// Package etcdcluster manages the stacked etcd cluster of a kubeadm cluster:
// the etcd members that run as static Pods on the control-plane nodes. Joining
// a control-plane node, resetting one and upgrading use it.
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
package etcdcluster
