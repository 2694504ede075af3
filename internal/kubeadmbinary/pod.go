package kubeadmbinary

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostMount is a host path a Pod of StaticPod mounts at the same path.
type HostMount struct {
	// Name names the volume.
	Name, Path string
	Type       corev1.HostPathType
	ReadOnly   bool
}

// PodOptions say what differs between the static Pods that run this
// program on a node (the node-local API server balancer, the self-hosted
// control plane's checkpointer).
type PodOptions struct {
	// Name is the Pod's and its container's name and its "component"
	// label; Tier its "tier" label.
	Name, Tier string
	// Image is the image whose filesystem the program runs in: the
	// cluster's pause image (the program is static and needs nothing
	// else from it).
	Image string
	// HashAnnotation names the annotation holding BinarySHA256, the
	// SHA-256 of the program at Path: a new program changes the manifest,
	// so the kubelet restarts the Pod.
	HashAnnotation, BinarySHA256 string
	// Command starts with Path.
	Command []string
	// Mounts come after the program's own (read-only, at Path).
	Mounts []HostMount
	// Priority and PriorityClassName are the Pod's scheduling priority.
	Priority          int32
	PriorityClassName string
}

// StaticPod returns the static Pod that runs this program, copied to
// Path, on the host network with the smallest rights a container can
// have: no privilege escalation, no capability, a read-only root file
// system, the runtime's default seccomp profile.
func StaticPod(o PodOptions) *corev1.Pod {
	program := corev1.HostPathFile
	mounts := append([]HostMount{{Name: "kubeadm", Path: Path, Type: program, ReadOnly: true}}, o.Mounts...)
	var volumeMounts []corev1.VolumeMount
	var volumes []corev1.Volume
	for _, m := range mounts {
		volumeMounts = append(volumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: m.Path, ReadOnly: m.ReadOnly})
		volumes = append(volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: m.Path, Type: new(m.Type)},
		}})
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        o.Name,
			Namespace:   metav1.NamespaceSystem,
			Annotations: map[string]string{o.HashAnnotation: o.BinarySHA256},
			Labels:      map[string]string{"component": o.Name, "tier": o.Tier},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            o.Name,
				Image:           o.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         o.Command,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("32Mi"),
				}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: new(false),
					ReadOnlyRootFilesystem:   new(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: volumeMounts,
			}},
			HostNetwork:       true,
			Priority:          new(o.Priority),
			PriorityClassName: o.PriorityClassName,
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
		},
	}
}
