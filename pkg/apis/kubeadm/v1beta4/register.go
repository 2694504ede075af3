package v1beta4

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupName is the API group of kubeadm's configuration types.
const GroupName = "kubeadm.k8s.io"

// SchemeGroupVersion is the group and version of the types in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta4"}

// The kinds of this version.
const (
	KindInitConfiguration    = "InitConfiguration"
	KindClusterConfiguration = "ClusterConfiguration"
	KindJoinConfiguration    = "JoinConfiguration"
	KindResetConfiguration   = "ResetConfiguration"
	KindUpgradeConfiguration = "UpgradeConfiguration"
)
