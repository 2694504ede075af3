// Package bootstraptoken keeps a cluster's bootstrap tokens and the objects
// that let joining nodes use them, as kubeadm v1.36 writes them:
//
//   - the tokens themselves, Secrets "bootstrap-token-<id>" of type
//     bootstrap.kubernetes.io/token in kube-system (Secret, FromSecret,
//     CreateOrUpdate, Create, List, Delete);
//   - the RBAC that lets a token holder post a CSR for its node
//     certificate, has the controller manager approve it, and lets nodes
//     renew their client certificates (Steps);
//   - the public kube-public/cluster-info ConfigMap that a joining node reads
//     anonymously and checks with the token's signature (ClusterInfo,
//     CreateClusterInfo);
//   - the join command printed for a token, with the hash of the cluster CA
//     (CACertHash, JoinCommand), and the "token list" output (Print).
//
// Every write is a create-or-update of a fixed object, so running the same
// calls again converges on the same state (only Create refuses a token ID
// that is already taken, as "kubeadm token create" does). The token secret
// is never put into an error or a log line: errors name tokens by their
// public ID only.
package bootstraptoken
