package controlplane

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// readPod reads one static Pod manifest.
func readPod(file string) (*corev1.Pod, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	pod := &corev1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		return nil, fmt.Errorf("parsing manifest %s: %w", file, err)
	}
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("manifest %s: want one container, found %d", file, len(pod.Spec.Containers))
	}
	return pod, nil
}

// mount is a hostPath volume as seen from inside the container.
type mount struct {
	containerPath string
	hostPath      string
}

// hostMounts lists the container's hostPath volume mounts.
func hostMounts(pod *corev1.Pod, c *corev1.Container) ([]mount, error) {
	hostPaths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	var mounts []mount
	for _, vm := range c.VolumeMounts {
		hp, ok := hostPaths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts volume %q, which is not a hostPath volume of the Pod", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			return nil, fmt.Errorf("container %s mounts volume %q with a subPath, which the harness does not map", c.Name, vm.Name)
		}
		mounts = append(mounts, mount{containerPath: path.Clean(vm.MountPath), hostPath: path.Clean(hp)})
	}
	return mounts, nil
}

// hostPath maps a path seen inside the container to the file a host
// process must use: through the longest mount that covers it, then under
// root. ok is false when no mount covers the path.
func hostPath(mounts []mount, root, p string) (string, bool) {
	p = path.Clean(p)
	best := -1
	for i, m := range mounts {
		if p == m.containerPath || strings.HasPrefix(p, strings.TrimSuffix(m.containerPath, "/")+"/") {
			if best < 0 || len(m.containerPath) > len(mounts[best].containerPath) {
				best = i
			}
		}
	}
	if best < 0 {
		return "", false
	}
	m := mounts[best]
	rest := strings.TrimPrefix(p, m.containerPath)
	return filepath.Join(root, m.hostPath, rest), true
}

// hostArgs returns the container's command and args as a host process runs
// them: argv[0] is left as written (the caller resolves the binary), and
// every argument that is, or is a flag whose value is, an absolute path is
// mapped with hostPath. A path no volume mounts is an error, since the
// container would not see that file either.
func hostArgs(pod *corev1.Pod, root string) ([]string, error) {
	c := &pod.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %s has no command", c.Name)
	}
	mounts, err := hostMounts(pod, c)
	if err != nil {
		return nil, err
	}
	out := []string{argv[0]}
	for _, arg := range argv[1:] {
		prefix, value := "", arg
		if strings.HasPrefix(arg, "-") {
			name, v, found := strings.Cut(arg, "=")
			if !found {
				out = append(out, arg)
				continue
			}
			prefix, value = name+"=", v
		}
		if !strings.HasPrefix(value, "/") {
			out = append(out, arg)
			continue
		}
		hp, ok := hostPath(mounts, root, value)
		if !ok {
			return nil, fmt.Errorf("container %s: argument %q names %s, which no hostPath volume mounts", c.Name, arg, value)
		}
		out = append(out, prefix+hp)
	}
	return out, nil
}

// probeTarget is where and how a manifest's HTTP probe is asked.
type probeTarget struct {
	url   string
	https bool
}

// readinessProbe returns the container's readiness probe target, falling
// back to the startup and then the liveness probe. An empty host means the
// Pod's address, which for a host-network Pod is the node's: defaultHost.
func readinessProbe(c *corev1.Container, defaultHost string) (probeTarget, error) {
	var get *corev1.HTTPGetAction
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.StartupProbe, c.LivenessProbe} {
		if p != nil && p.HTTPGet != nil {
			get = p.HTTPGet
			break
		}
	}
	if get == nil {
		return probeTarget{}, fmt.Errorf("container %s has no HTTP probe", c.Name)
	}
	port := get.Port.IntValue()
	if get.Port.StrVal != "" {
		port = 0
		for _, cp := range c.Ports {
			if cp.Name == get.Port.StrVal {
				port = int(cp.ContainerPort)
			}
		}
	}
	if port == 0 {
		return probeTarget{}, fmt.Errorf("container %s: probe port %q is not a declared port", c.Name, get.Port.String())
	}
	host := get.Host
	if host == "" {
		host = defaultHost
	}
	scheme := "http"
	if get.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	p := get.Path
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return probeTarget{
		url:   fmt.Sprintf("%s://%s%s", scheme, joinHostPort(host, port), p),
		https: scheme == "https",
	}, nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
