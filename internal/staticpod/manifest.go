package staticpod

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/patches"
)

// Modes of the manifest folder when it is created, and of the manifests.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// ManifestPath is the path of component's manifest in dir.
func ManifestPath(dir, component string) string {
	return filepath.Join(dir, component+".yaml")
}

// Marshal serialises pod as a manifest file holds it (YAML, keys sorted).
func Marshal(pod *corev1.Pod) ([]byte, error) {
	b, err := yaml.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("serialising the %s Pod: %w", pod.Name, err)
	}
	return b, nil
}

// Patch applies the patches of set for target (a component name) to pod
// and returns the patched Pod, reporting each patch to out. Fields a patch
// adds that a Pod does not have are dropped; a patch that turns the
// document into something other than a v1 Pod is an error. With no
// patches for target, pod itself is returned.
func Patch(target string, pod *corev1.Pod, set *patches.Set, out io.Writer) (*corev1.Pod, error) {
	p, err := patches.ApplyTo(set, target, pod, out)
	if err != nil {
		return nil, fmt.Errorf("patching the %s manifest: %w", target, err)
	}
	return p, nil
}

// WriteManifest writes data as component's manifest in dir, creating dir
// (mode 0700) when missing; an existing folder keeps its mode. The file
// gets mode 0600. Idempotent: when the file already holds data it is not
// rewritten, so the kubelet does not restart the Pod, and only its mode is
// corrected if needed. written reports whether the content changed.
func WriteManifest(dir, component string, data []byte) (written bool, err error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return false, fmt.Errorf("creating the manifest folder: %w", err)
	}
	path := ManifestPath(dir, component)
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	switch {
	case err == nil && bytes.Equal(old, data):
		fi, err := os.Stat(path)
		if err != nil {
			return false, fmt.Errorf("checking manifest: %w", err)
		}
		if fi.Mode().Perm() != FileMode {
			if err := os.Chmod(path, FileMode); err != nil {
				return false, fmt.Errorf("setting the mode of manifest: %w", err)
			}
		}
		return false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("reading the current manifest: %w", err)
	}
	if err := atomicfile.Write(path, data, FileMode); err != nil {
		return false, fmt.Errorf("writing the %s manifest: %w", component, err)
	}
	return true, nil
}
