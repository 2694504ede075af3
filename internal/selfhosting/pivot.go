package selfhosting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Node is a control-plane node that Pivot and Unpivot move between a
// static and a self-hosted control plane, and what they need to do it.
type Node struct {
	Client   kubernetes.Interface
	NodeName string
	// ManifestDir is the kubelet's static Pod folder; CheckpointDir keeps
	// the checkpoints.
	ManifestDir, CheckpointDir string
	// InstallCheckpointer puts the kubeadm binary and the checkpointer's
	// static Pod on the node (idempotent).
	InstallCheckpointer func() error
	// Record stores in kubeadm-config whether the cluster is self-hosted
	// (the Gate in its ClusterConfiguration).
	Record func(ctx context.Context, on bool) error
	// Healthy asks the health endpoint of a component's Pod (the static
	// Pod's probe).
	Healthy func(ctx context.Context, pod *corev1.Pod) error
	// Timeout bounds the wait for each component; Interval is the pause
	// between two looks.
	Timeout, Interval time.Duration
	Out               io.Writer
}

// Pivot makes the node's control plane self-hosted. It refuses a cluster
// with more than one control-plane node. It first records the mode in
// kubeadm-config and installs the checkpointer, then, for the scheduler,
// the controller manager and the API server in turn: saves the static
// Pod manifest as the component's checkpoint, creates or updates its
// DaemonSet, waits until the kubelet has started the DaemonSet Pod on this
// node (it fails to listen while the static Pod holds the ports), removes
// the static manifest and waits until the DaemonSet Pod is ready and the
// component healthy. A component whose manifest is already gone is taken
// from its checkpoint, so Pivot resumes where a crashed run stopped.
func (n Node) Pivot(ctx context.Context) error {
	if err := n.singleControlPlane(ctx); err != nil {
		return err
	}
	if err := n.Record(ctx, true); err != nil {
		return fmt.Errorf("recording the self-hosted control plane in kubeadm-config: %w", err)
	}
	if err := n.InstallCheckpointer(); err != nil {
		return fmt.Errorf("installing the checkpointer: %w", err)
	}
	fmt.Fprintf(n.Out, "[self-hosted] Installed the %s static Pod, which restores the control plane from %s after a restart\n", Checkpointer, n.CheckpointDir)
	for _, comp := range Components() {
		if err := n.pivot(ctx, comp); err != nil {
			return fmt.Errorf("self-hosting %s: %w", comp, err)
		}
	}
	return nil
}

func (n Node) pivot(ctx context.Context, comp string) error {
	start := time.Now()
	manifest := staticpod.ManifestPath(n.ManifestDir, comp)
	checkpoint := CheckpointPath(n.CheckpointDir, comp)
	data, err := boundedread.ReadFile(manifest, boundedread.MaxFile)
	static := err == nil
	switch {
	case static:
		if !sameFile(checkpoint, data) {
			if err := os.MkdirAll(n.CheckpointDir, staticpod.DirMode); err != nil {
				return fmt.Errorf("creating the checkpoint folder: %w", err)
			}
			if err := atomicfile.Write(checkpoint, data, staticpod.FileMode); err != nil {
				return fmt.Errorf("saving the checkpoint: %w", err)
			}
		}
	case errors.Is(err, fs.ErrNotExist):
		if data, err = boundedread.ReadFile(checkpoint, boundedread.MaxFile); err != nil {
			return fmt.Errorf("the node has neither the static Pod manifest nor its checkpoint: %w", err)
		}
	default:
		return err
	}
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return fmt.Errorf("reading the %s static Pod: %w", comp, err)
	}
	ds, err := DaemonSet(comp, pod)
	if err != nil {
		return err
	}
	dsets := n.Client.AppsV1().DaemonSets(metav1.NamespaceSystem)
	if err := apiclient.CreateOrUpdate(ctx, dsets, ds); err != nil {
		return fmt.Errorf("creating DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	fmt.Fprintf(n.Out, "[self-hosted] Created DaemonSet %s/%s from the static Pod (checkpoint %s)\n", ds.Namespace, ds.Name, checkpoint)
	if static {
		err := n.wait(ctx, "the kubelet to start the DaemonSet Pod of "+comp, func(ctx context.Context) error {
			pods, err := NodePods(ctx, n.Client, n.NodeName)
			if err != nil {
				return err
			}
			if !Started(pods, comp, time.Time{}) {
				return fmt.Errorf("no container of it started yet")
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := os.Remove(manifest); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the static Pod manifest: %w", err)
		}
		fmt.Fprintf(n.Out, "[self-hosted] Removed the static Pod manifest %s\n", manifest)
	}
	err = n.wait(ctx, "the DaemonSet Pod of "+comp+" to be ready", func(ctx context.Context) error {
		if err := n.Healthy(ctx, pod); err != nil {
			return err
		}
		pods, err := NodePods(ctx, n.Client, n.NodeName)
		if err != nil {
			return err
		}
		if !ready(pods, comp) {
			return fmt.Errorf("not ready yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(n.Out, "[self-hosted] %s runs from its DaemonSet (%v)\n", comp, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// Unpivot returns the node's control plane to static Pods. It first
// removes the checkpointer (so that nothing else moves manifests), then,
// for the scheduler, the controller manager and the API server in turn:
// writes the component's checkpoint back as its static Pod manifest,
// deletes its DaemonSet and the DaemonSet's Pods, waits until they are
// gone and the static Pod serves, and deletes the checkpoint. Last it
// records in kubeadm-config that the cluster is no longer self-hosted. A
// component whose checkpoint is gone is static already: only its
// DaemonSet is made sure to be gone, so Unpivot resumes where a crashed
// run stopped.
func (n Node) Unpivot(ctx context.Context) error {
	guard := staticpod.ManifestPath(n.ManifestDir, Checkpointer)
	if err := os.Remove(guard); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the checkpointer: %w", err)
	}
	err := n.wait(ctx, "the checkpointer to stop", func(ctx context.Context) error {
		_, err := n.Client.CoreV1().Pods(metav1.NamespaceSystem).Get(ctx, Checkpointer+"-"+n.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return fmt.Errorf("its Pod still exists")
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(n.Out, "[self-hosted] Removed the %s static Pod\n", Checkpointer)
	for _, comp := range Components() {
		if err := n.unpivot(ctx, comp); err != nil {
			return fmt.Errorf("returning %s to a static Pod: %w", comp, err)
		}
	}
	if err := os.Remove(n.CheckpointDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(n.Out, "[self-hosted] WARNING: %v\n", err)
	}
	if err := n.Record(ctx, false); err != nil {
		return fmt.Errorf("recording the static control plane in kubeadm-config: %w", err)
	}
	return nil
}

func (n Node) unpivot(ctx context.Context, comp string) error {
	start := time.Now()
	checkpoint := CheckpointPath(n.CheckpointDir, comp)
	data, err := boundedread.ReadFile(checkpoint, boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = boundedread.ReadFile(staticpod.ManifestPath(n.ManifestDir, comp), boundedread.MaxFile)
		if err != nil {
			return fmt.Errorf("the node has neither the checkpoint nor the static Pod manifest: %w", err)
		}
	} else if err != nil {
		return err
	}
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return fmt.Errorf("reading the %s static Pod: %w", comp, err)
	}
	if _, err := staticpod.WriteManifest(n.ManifestDir, comp, data); err != nil {
		return err
	}
	fmt.Fprintf(n.Out, "[self-hosted] Wrote the static Pod manifest %s\n", staticpod.ManifestPath(n.ManifestDir, comp))
	name := DaemonSetName(comp)
	background := metav1.DeletePropagationBackground
	err = apiclient.RetryWrite(ctx, func() error {
		err := n.Client.AppsV1().DaemonSets(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting DaemonSet %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	fmt.Fprintf(n.Out, "[self-hosted] Deleted DaemonSet %s/%s\n", metav1.NamespaceSystem, name)
	deleted := false
	err = n.wait(ctx, "the DaemonSet Pod of "+comp+" to go and the static Pod to serve", func(ctx context.Context) error {
		pods, err := NodePods(ctx, n.Client, n.NodeName)
		if err != nil {
			return err
		}
		pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.Labels[AppLabel] != name })
		if len(pods) > 0 {
			if !deleted {
				// Not only the garbage collector's job: when the API
				// server goes, it may not have done it yet.
				for _, p := range pods {
					if err := n.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						return err
					}
				}
				deleted = true
			}
			return fmt.Errorf("%d Pod(s) left", len(pods))
		}
		return n.Healthy(ctx, pod)
	})
	if err != nil {
		return err
	}
	if err := os.Remove(checkpoint); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the checkpoint: %w", err)
	}
	fmt.Fprintf(n.Out, "[self-hosted] %s runs as a static Pod again (%v)\n", comp, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// singleControlPlane refuses a cluster with more than one control-plane
// node: the DaemonSet would start a component beside the static Pod of
// each other control-plane node, on the same ports.
func (n Node) singleControlPlane(ctx context.Context) error {
	var nodes *corev1.NodeList
	err := n.wait(ctx, "the list of control-plane nodes", func(ctx context.Context) error {
		var err error
		nodes, err = n.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: noderole.ControlPlaneLabel})
		return err
	})
	if err != nil {
		return err
	}
	var names []string
	for _, nd := range nodes.Items {
		names = append(names, nd.Name)
	}
	if len(names) != 1 || names[0] != n.NodeName {
		return fmt.Errorf("a self-hosted control plane is supported on a cluster with one control-plane node, this one (%q); the control-plane nodes are %v", n.NodeName, names)
	}
	return nil
}

// wait calls check every Interval until it succeeds or Timeout passes;
// the API server may be away for a while in between.
func (n Node) wait(ctx context.Context, what string, check func(ctx context.Context) error) error {
	err := apiclient.Poll(ctx, n.Interval, n.Timeout, func(ctx context.Context) (bool, error) {
		if err := check(ctx); err != nil {
			return false, apiclient.Retry(err)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// ready reports whether a DaemonSet Pod of component among pods is ready.
func ready(pods []corev1.Pod, component string) bool {
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels[AppLabel] != DaemonSetName(component) {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
	}
	return false
}
