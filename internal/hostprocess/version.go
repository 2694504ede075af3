package hostprocess

import (
	"fmt"
	"strings"
)

// VersionArgs are the arguments that make a component's program print
// its version.
func VersionArgs() []string { return []string{"--version"} }

// ParseVersion takes the version out of what a component's program prints
// for --version: "Kubernetes v1.37.2" for the Kubernetes components,
// "etcd Version: 3.7.0" (first line) for etcd. The result has no "v".
func ParseVersion(component string, out []byte) (string, error) {
	text := strings.TrimSpace(string(out))
	if component == Etcd {
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "etcd Version:"); ok {
				return strings.TrimPrefix(strings.TrimSpace(v), "v"), nil
			}
		}
		return "", fmt.Errorf("%s --version printed no \"etcd Version:\" line: %q", component, firstLine(text))
	}
	v, ok := strings.CutPrefix(firstLine(text), "Kubernetes ")
	if !ok || v == "" {
		return "", fmt.Errorf("%s --version printed %q, not \"Kubernetes vX.Y.Z\"", component, firstLine(text))
	}
	return strings.TrimPrefix(strings.TrimSpace(v), "v"), nil
}

// WantVersion is the version component's program must report: the
// cluster's Kubernetes version, or for etcd the etcd image tag without its
// "-N" build suffix (3.7.0-0 is etcd 3.7.0). No "v".
func WantVersion(component, kubernetesVersion, etcdImageTag string) string {
	if component == Etcd {
		tag := strings.TrimPrefix(etcdImageTag, "v")
		if i := strings.LastIndex(tag, "-"); i > 0 {
			tag = tag[:i]
		}
		return tag
	}
	return strings.TrimPrefix(kubernetesVersion, "v")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}
