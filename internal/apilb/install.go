package apilb

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// What the static Pod is called and where its program lives on a node.
const (
	// Component is the name of the static Pod and of its manifest file.
	Component = "kube-apiserver-lb"
	// BinaryPath is where init and join copy the running kubeadm binary;
	// the Pod runs it from there.
	BinaryPath = kubeadmbinary.Path
	// BinaryHashAnnotation carries the SHA-256 of the binary the Pod runs,
	// so a new binary (an upgrade) changes the manifest and the kubelet
	// restarts the Pod.
	BinaryHashAnnotation = "kubeadm.kubernetes.io/apiserver-lb-binary-sha256"
	// kubeletConf is the kubelet's kubeconfig, whose CA and client
	// certificate the balancer uses.
	kubeletConf = "/etc/kubernetes/kubelet.conf"
	// kubeletPKI holds the kubelet's rotated client certificate, which
	// kubelet.conf names once the kubelet has one.
	kubeletPKI = "/var/lib/kubelet/pki"
	// The priority of system-node-critical, as kubeadm's other static Pods.
	priorityClassName = "system-node-critical"
	priority          = int32(2000001000)
)

// PodOptions are what the balancer's static Pod depends on.
type PodOptions struct {
	// Image is the image whose filesystem the program runs in: the
	// cluster's pause image (a static program needs nothing else).
	Image string
	// BinarySHA256 is the hex SHA-256 of BinaryPath's content.
	BinarySHA256 string
	// KubernetesDir is /etc/kubernetes.
	KubernetesDir string
	// Preferred is this node's own API server (host:port) on a
	// control-plane node, "" on a worker.
	Preferred string
}

// Pod returns the static Pod that runs the balancer on a node.
func Pod(o PodOptions) *corev1.Pod {
	stateDir := filepath.Join(o.KubernetesDir, StateDir)
	cmd := []string{
		BinaryPath, "apiserver-lb",
		"--listen=" + ListenAddress,
		"--kubeconfig=" + kubeletConf,
		"--upstreams-file=" + filepath.Join(stateDir, UpstreamsFile),
	}
	if o.Preferred != "" {
		cmd = append(cmd, "--prefer="+o.Preferred)
	}
	return kubeadmbinary.StaticPod(kubeadmbinary.PodOptions{
		Name:           Component,
		Tier:           "node",
		Image:          o.Image,
		HashAnnotation: BinaryHashAnnotation,
		BinarySHA256:   o.BinarySHA256,
		Command:        cmd,
		Mounts: []kubeadmbinary.HostMount{
			{Name: "kubeconfig", Path: kubeletConf, Type: corev1.HostPathFile, ReadOnly: true},
			{Name: "kubelet-pki", Path: kubeletPKI, Type: corev1.HostPathDirectory, ReadOnly: true},
			{Name: "state", Path: stateDir, Type: corev1.HostPathDirectoryOrCreate},
		},
		Priority:          priority,
		PriorityClassName: priorityClassName,
	})
}

// InstallOptions say what Install puts on a node.
type InstallOptions struct {
	PodOptions
	// ManifestDir is the kubelet's static Pod folder.
	ManifestDir string
	// Source is the kubeadm binary to copy to BinaryPath (the running
	// one, os.Executable); BinaryPath is where it goes ("" = BinaryPath).
	Source, Binary string
	// Seed are API server addresses kubeadm knows (host:port); they are
	// added to the saved list.
	Seed []string
	// DryRun writes only the manifest (into ManifestDir, the dry-run
	// folder) and copies no binary.
	DryRun bool
	// Out receives progress lines.
	Out io.Writer
}

// Install puts the balancer on a node: the kubeadm binary at BinaryPath,
// the seed addresses merged into the saved upstream list, and the static
// Pod manifest. Idempotent: a binary and manifest already right are left
// as they are, so the kubelet restarts nothing; a re-run only adds seed
// addresses the list lacks.
func Install(o InstallOptions) error {
	binary := o.Binary
	if binary == "" {
		binary = BinaryPath
	}
	sum, err := kubeadmbinary.SHA256(o.Source)
	if err != nil {
		return fmt.Errorf("the kubeadm binary to run the API server load balancer: %w", err)
	}
	o.BinarySHA256 = sum
	if !o.DryRun {
		if err := kubeadmbinary.Install(o.Source, binary, sum); err != nil {
			return fmt.Errorf("the kubeadm binary of the API server load balancer: %w", err)
		}
		path := filepath.Join(o.KubernetesDir, StateDir, UpstreamsFile)
		old, err := ReadUpstreams(path)
		if err != nil {
			return err
		}
		merged, err := NormalizeUpstreams(slices.Concat(old, o.Seed))
		if err != nil {
			return fmt.Errorf("the API server addresses to seed %s with: %w", path, err)
		}
		if !slices.Equal(merged, old) {
			fmt.Fprintf(o.Out, "[apiserver-lb] Writing the API server addresses %v to %q\n", merged, path)
			if err := WriteUpstreams(path, merged); err != nil {
				return err
			}
		}
	}
	data, err := staticpod.Marshal(Pod(o.PodOptions))
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "[apiserver-lb] Creating static Pod manifest for %q, which forwards %s to the cluster's API servers\n", Component, ListenAddress)
	if _, err := staticpod.WriteManifest(o.ManifestDir, Component, data); err != nil {
		return err
	}
	return nil
}

// Remove deletes the balancer's manifest from manifestDir and its state
// folder under kubernetesDir. The binary copy at BinaryPath stays: other
// static Pods may run it. Missing files are not an error.
func Remove(manifestDir, kubernetesDir string) error {
	var errs []error
	if err := os.Remove(staticpod.ManifestPath(manifestDir, Component)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(filepath.Join(kubernetesDir, StateDir)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Installed reads the balancer's manifest in manifestDir: whether it is
// there, and the upstream it prefers ("" on a worker). Upgrades use it to
// keep a node's balancer as it was set up.
func Installed(manifestDir string) (installed bool, preferred string, err error) {
	path := staticpod.ManifestPath(manifestDir, Component)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	flags, err := staticpod.ReadFlags(path)
	if err != nil {
		return false, "", err
	}
	return true, flags["prefer"], nil
}
