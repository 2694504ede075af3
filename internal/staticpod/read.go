package staticpod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// ReadManifest reads and decodes a static Pod manifest.
func ReadManifest(path string) (*corev1.Pod, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, fmt.Errorf("reading the static Pod manifest: %w", err)
	}
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return nil, fmt.Errorf("parsing the static Pod manifest %s: %w", path, err)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the static Pod manifest %s has no container", path)
	}
	return pod, nil
}

// Flags returns the "--name=value" flags of the Pod's first container's
// command and arguments (the last one wins for a repeated name).
func Flags(pod *corev1.Pod) map[string]string {
	flags := map[string]string{}
	for _, a := range CommandLine(pod) {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			flags[name] = value
		}
	}
	return flags
}

// CommandLine is the command and arguments of the Pod's first container
// (the component), nil without one.
func CommandLine(pod *corev1.Pod) []string {
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	c := pod.Spec.Containers[0]
	return append(append([]string{}, c.Command...), c.Args...)
}

// ReadFlags reads a static Pod manifest and returns its flags (see Flags).
func ReadFlags(path string) (map[string]string, error) {
	pod, err := ReadManifest(path)
	if err != nil {
		return nil, err
	}
	return Flags(pod), nil
}
