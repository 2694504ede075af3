package selfhosting

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// UpgradeOrder is the order in which an upgrade replaces the self-hosted
// components: the API server first (the others may not be newer than it).
func UpgradeOrder() []string {
	return []string{staticpod.KubeAPIServer, staticpod.KubeControllerManager, staticpod.KubeScheduler}
}

// Upgrade replaces component's self-hosted Pod on this node, the only
// control-plane node, by the one of data (the static Pod manifest of the
// new version, as init writes it), and returns the checkpoint it had
// (for a rollback, which is Upgrade with it). It does, in turn:
//
//  1. writes data as the component's checkpoint, so that whatever stands
//     in for the component from now on runs the new version;
//  2. updates the component's DaemonSet from data; its rolling update
//     deletes the node's old Pod;
//  3. once the component stops answering while its new Pod cannot come
//     without a stand-in (for the API server: the API server does not
//     answer, and nothing can make the new Pod; for the others: the API
//     server answers and the node has no DaemonSet Pod of the component,
//     as the old one's controller manager or scheduler is gone), puts the
//     new checkpoint into the manifest folder, as the checkpointer would
//     after its grace period. The kubelet runs it; it brings the new
//     DaemonSet Pod about, and the checkpointer takes it away again;
//  4. waits until the node's DaemonSet Pod runs data's containers and is
//     ready, no checkpoint of the component is in the manifest folder,
//     and the component answers.
//
// When the checkpoint already holds data, the DaemonSet's template is the
// one data makes and the node's Pod runs it, nothing is changed and
// changed is false. Upgrade can be run again after an interruption.
func (n Node) Upgrade(ctx context.Context, component string, data []byte) (old []byte, changed bool, err error) {
	start := time.Now()
	checkpoint := CheckpointPath(n.CheckpointDir, component)
	if old, err = boundedread.ReadFile(checkpoint, boundedread.MaxFile); err != nil {
		return nil, false, fmt.Errorf("reading the checkpoint of %s: %w", component, err)
	}
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return old, false, fmt.Errorf("reading the new %s static Pod: %w", component, err)
	}
	ds, err := DaemonSet(component, pod)
	if err != nil {
		return old, false, err
	}
	h, err := templateHash(ds)
	if err != nil {
		return old, false, err
	}
	ds.Annotations = map[string]string{TemplateHashAnnotation: h}
	dsets := n.Client.AppsV1().DaemonSets(metav1.NamespaceSystem)
	if sameFile(checkpoint, data) {
		cur, err := dsets.Get(ctx, ds.Name, metav1.GetOptions{})
		if err == nil && sameTemplate(cur, ds) && !n.stillToDo(ctx, component, pod, ds) {
			fmt.Fprintf(n.Out, "[upgrade/self-hosted] %s runs the new version already\n", component)
			return old, false, nil
		}
	}
	if err := atomicfile.Write(checkpoint, data, staticpod.FileMode); err != nil {
		return old, false, fmt.Errorf("writing the checkpoint of %s: %w", component, err)
	}
	fmt.Fprintf(n.Out, "[upgrade/self-hosted] Wrote the new checkpoint %s\n", checkpoint)
	active := staticpod.ManifestPath(n.ManifestDir, component)
	updated, placed, downLooks := false, false, 0
	var seenActive time.Time
	err = n.wait(ctx, "the new DaemonSet Pod of "+component, func(ctx context.Context) error {
		if !updated {
			// Retried: on a rollback the API server may be the
			// component that does not come up.
			if err := apiclient.CreateOrUpdate(ctx, dsets, ds); err == nil {
				updated = true
				fmt.Fprintf(n.Out, "[upgrade/self-hosted] Updated DaemonSet %s/%s; its rolling update replaces the Pod\n", ds.Namespace, ds.Name)
			}
		}
		healthErr := n.Healthy(ctx, pod)
		pods, podsErr := NodePods(ctx, n.Client, n.NodeName)
		_, statErr := os.Stat(active)
		inPlace := statErr == nil
		if inPlace {
			seenActive = time.Now()
			// The new checkpoint stands in (put there here, or by the
			// checkpointer): once is enough; the checkpointer hands
			// over, and the component is then away for a moment again.
			// An old one (the checkpointer's, from before) does not
			// count: it may step aside before the old Pod is gone.
			placed = placed || sameFile(active, data)
		}
		needed := podsErr != nil
		if component != staticpod.KubeAPIServer {
			needed = podsErr == nil && !Bound(pods, component)
		}
		if healthErr != nil && needed {
			downLooks++
		} else {
			downLooks = 0
		}
		if !placed && !inPlace && downLooks >= 2 {
			if err := atomicfile.Write(active, data, staticpod.FileMode); err != nil {
				return fmt.Errorf("putting the new checkpoint of %s in place: %w", component, err)
			}
			placed = true
			fmt.Fprintf(n.Out, "[upgrade/self-hosted] The old Pod of %s is gone: put its new checkpoint into %s to bring up the new one\n", component, n.ManifestDir)
			return errors.New("the new checkpoint was just put in place")
		}
		switch {
		case !updated:
			return fmt.Errorf("DaemonSet %s/%s is not updated yet", ds.Namespace, ds.Name)
		case podsErr != nil:
			return podsErr
		case inPlace:
			return fmt.Errorf("its checkpoint is still in %s", n.ManifestDir)
		case !runsTemplate(pods, component, ds, seenActive):
			return errors.New("no Pod of the new template runs and is ready on this node yet")
		}
		return healthErr
	})
	if err != nil {
		return old, true, err
	}
	fmt.Fprintf(n.Out, "[upgrade/self-hosted] %s runs the new version from its DaemonSet (%v)\n", component, time.Since(start).Round(100*time.Millisecond))
	return old, true, nil
}

// stillToDo reports whether the node's Pod of component does not run ds's
// template yet, or the component does not answer.
func (n Node) stillToDo(ctx context.Context, component string, pod *corev1.Pod, ds *appsv1.DaemonSet) bool {
	pods, err := NodePods(ctx, n.Client, n.NodeName)
	if err != nil || !runsTemplate(pods, component, ds, time.Time{}) {
		return true
	}
	if _, err := os.Stat(staticpod.ManifestPath(n.ManifestDir, component)); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return n.Healthy(ctx, pod) != nil
}

// TemplateHashAnnotation, on a DaemonSet that Upgrade wrote, carries the
// SHA-256 of its Pod template as Upgrade made it: the API server's
// defaults make the stored template differ from it.
const TemplateHashAnnotation = "kubeadm.kubernetes.io/self-hosted-template-sha256"

// templateHash is the hex SHA-256 of ds's Pod template.
func templateHash(ds *appsv1.DaemonSet) (string, error) {
	data, err := json.Marshal(ds.Spec.Template)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// sameTemplate reports whether the DaemonSet cur was written by Upgrade
// with want's template.
func sameTemplate(cur, want *appsv1.DaemonSet) bool {
	h := want.Annotations[TemplateHashAnnotation]
	return h != "" && cur.Annotations[TemplateHashAnnotation] == h
}

// runsTemplate reports whether among pods a DaemonSet Pod of component,
// not being deleted, is ready with the containers (images, commands and
// arguments) of ds's template, every one running since since (to the
// second; the zero time: any).
func runsTemplate(pods []corev1.Pod, component string, ds *appsv1.DaemonSet, since time.Time) bool {
	since = since.Truncate(time.Second)
	want := ds.Spec.Template.Spec.Containers
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Labels[AppLabel] != DaemonSetName(component) || !ready([]corev1.Pod{p}, component) {
			continue
		}
		if !slices.EqualFunc(p.Spec.Containers, want, func(a, b corev1.Container) bool {
			return a.Image == b.Image && slices.Equal(a.Command, b.Command) && slices.Equal(a.Args, b.Args)
		}) {
			continue
		}
		running := len(p.Status.ContainerStatuses) == len(want)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || cs.State.Running.StartedAt.Time.Before(since) {
				running = false
			}
		}
		if running {
			return true
		}
	}
	return false
}
