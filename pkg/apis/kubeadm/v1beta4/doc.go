// Package v1beta4 holds the Go types of kubeadm's configuration file format
// kubeadm.k8s.io/v1beta4, with the same field names and JSON/YAML tags as
// upstream kubeadm v1.36, so other programs can build or read kubeadm
// configuration without importing k8s.io/kubernetes.
//
// A file in this format is a YAML stream of documents, each with an
// apiVersion of kubeadm.k8s.io/v1beta4 and one of the kinds
// InitConfiguration, ClusterConfiguration, JoinConfiguration,
// ResetConfiguration and UpgradeConfiguration. SetDefaults_* fill in the
// static defaults kubeadm applies to each kind.
package v1beta4
