// Package etcdrpc is the etcd v3 client kubeadm needs: the member list and
// its changes (add as learner, promote, remove), a member's status, a
// linearizable count (the health check's read) and the snapshot stream,
// over gRPC with TLS.
//
// It speaks etcd's gRPC API directly: each call names its method
// ("/etcdserverpb.Cluster/MemberList", …) and its request and answer are
// encoded and decoded here, field by field (messages.go), with a codec that
// passes the bytes through. etcd's own client, go.etcd.io/etcd/client/v3,
// would do the same work, but it links etcd's generated API packages, whose
// protocol buffer registries (gogo's and the Go API's, with their file
// descriptors) every kubeadm command initialised at start-up, a few
// milliseconds a process. The gRPC library itself is linked anyway (the
// container runtime's client uses it).
//
// Errors are gRPC status errors as etcd sends them: the code, and etcd's
// description as the message ("etcdserver: member not found"); Error
// names the descriptions kubeadm tells apart.
//
// A Client holds one connection per endpoint, made on first use. A call
// that is not for a given endpoint goes to the endpoint that answered last
// and, when that one cannot be reached, to the next ones in turn; after
// etcd refuses a call (a learner, no leader, a timeout) the next call
// starts at the next endpoint, as etcd's own client balances.
package etcdrpc
