package kubeadmbinary

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The program's own mount comes first and read-only; each HostMount gives
// a volume and a mount at the same path, in order; the container keeps no
// right it does not need.
func TestStaticPod(t *testing.T) {
	p := StaticPod(PodOptions{
		Name: "x", Tier: "node", Image: "pause", HashAnnotation: "h", BinarySHA256: "abc",
		Command: []string{Path, "run"}, Priority: 7, PriorityClassName: "c",
		Mounts: []HostMount{{Name: "state", Path: "/s", Type: corev1.HostPathDirectoryOrCreate}},
	})
	c := p.Spec.Containers[0]
	if len(c.VolumeMounts) != 2 || c.VolumeMounts[0].MountPath != Path || !c.VolumeMounts[0].ReadOnly ||
		c.VolumeMounts[1].MountPath != "/s" || c.VolumeMounts[1].ReadOnly {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if v := p.Spec.Volumes[1].HostPath; v.Path != "/s" || *v.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("volume %+v", v)
	}
	if p.Annotations["h"] != "abc" || p.Labels["component"] != "x" || p.Labels["tier"] != "node" || *p.Spec.Priority != 7 || !p.Spec.HostNetwork {
		t.Errorf("pod %+v", p.ObjectMeta)
	}
	if sc := c.SecurityContext; *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 {
		t.Errorf("security context %+v", sc)
	}
}
