package selfhosting

import (
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Gate is the feature gate that makes init pivot to a self-hosted control
// plane, and records in kubeadm-config that a cluster is self-hosted (the
// name of the gate kubeadm v1.8–v1.11 had).
const Gate = "SelfHosting"

// Enabled reports whether the gate is on in gates.
func Enabled(gates map[string]bool) bool { return gates[Gate] }

// Names and places of the mode.
const (
	// Prefix starts the names of the DaemonSets and the value of their
	// Pods' AppLabel (upstream's names).
	Prefix = "self-hosted-"
	// AppLabel selects a component's DaemonSet Pods.
	AppLabel = "k8s-app"
	// CheckpointFolder, under the Kubernetes folder (/etc/kubernetes),
	// keeps the checkpoints: each component's static Pod manifest as it
	// was before the pivot, outside the kubelet's manifest folder.
	CheckpointFolder = "self-hosted"
	// Checkpointer is the name of the checkpointer's static Pod and of
	// its manifest file.
	Checkpointer = "self-hosted-checkpointer"
)

// Components are the components that are self-hosted, in the order a
// pivot moves them: the API server last.
func Components() []string {
	return []string{staticpod.KubeScheduler, staticpod.KubeControllerManager, staticpod.KubeAPIServer}
}

// DaemonSetName is the name of component's DaemonSet.
func DaemonSetName(component string) string { return Prefix + component }

// CheckpointDir is the folder of the checkpoints under kubernetesDir
// (/etc/kubernetes).
func CheckpointDir(kubernetesDir string) string {
	return filepath.Join(kubernetesDir, CheckpointFolder)
}

// CheckpointPath is where component's checkpoint is kept.
func CheckpointPath(checkpointDir, component string) string {
	return filepath.Join(checkpointDir, component+".yaml")
}
