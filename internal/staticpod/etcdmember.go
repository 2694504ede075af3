package staticpod

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EtcdMember is what the etcd static Pod manifest of a node says about the
// member it runs, read from the command line of its container.
type EtcdMember struct {
	// Name is the member's --name.
	Name string
	// ClientURLs are its --advertise-client-urls, PeerURLs its
	// --initial-advertise-peer-urls.
	ClientURLs, PeerURLs []string
	// DataDir is its --data-dir as the container sees it; HostDataDir is
	// the same folder on the node, through the hostPath volume that mounts
	// it (empty when no hostPath volume does).
	DataDir, HostDataDir string
	// InitialClusterToken is its --initial-cluster-token, empty when the
	// manifest leaves etcd's default.
	InitialClusterToken string
}

// ReadEtcdMember reads the etcd manifest in manifestDir. A missing
// manifest is an error that matches fs.ErrNotExist (a worker node, or a
// cluster with an external etcd). The flags are read as Flags reads them.
func ReadEtcdMember(manifestDir string) (*EtcdMember, error) {
	pod, err := ReadManifest(ManifestPath(manifestDir, Etcd))
	if err != nil {
		return nil, err
	}
	return EtcdMemberOf(pod), nil
}

// EtcdMemberOf reads the member out of an etcd Pod (a manifest, or the
// Pod a host-process unit gives back, whose paths are the node's).
func EtcdMemberOf(pod *corev1.Pod) *EtcdMember {
	flags := Flags(pod)
	m := &EtcdMember{
		Name:                flags["name"],
		ClientURLs:          splitList(flags["advertise-client-urls"]),
		PeerURLs:            splitList(flags["initial-advertise-peer-urls"]),
		DataDir:             flags["data-dir"],
		InitialClusterToken: flags["initial-cluster-token"],
	}
	if m.DataDir != "" {
		m.HostDataDir = hostPathOf(pod, &pod.Spec.Containers[0], m.DataDir)
	}
	return m
}

// hostPathOf maps p, a path inside container c, to the node's path through
// the hostPath volume whose mount covers it most closely; "" when none
// does.
func hostPathOf(pod *corev1.Pod, c *corev1.Container, p string) string {
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	p = path.Clean(p)
	best, bestLen := "", -1
	for _, vm := range c.VolumeMounts {
		hp, ok := hostPaths[vm.Name]
		if !ok || vm.SubPath != "" {
			continue
		}
		mp := path.Clean(vm.MountPath)
		rest, covered := strings.CutPrefix(p, mp)
		if !covered || (rest != "" && !strings.HasPrefix(rest, "/") && mp != "/") {
			continue
		}
		if len(mp) > bestLen {
			best, bestLen = path.Join(hp, rest), len(mp)
		}
	}
	return best
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
