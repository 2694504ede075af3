package carotation

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeadm-go/kubeadm/internal/addons/coredns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubedns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubeproxy"
)

// RestartedForAnnotation, on the Pod template of an addon that trust
// restarted, names the new cluster CA (in --discovery-token-ca-cert-hash
// form) its Pods were started to trust. Set once per rotation, it tells a
// second run that the restart is made; it stays after the rotation, as
// kubectl's rollout restart leaves its own (removing it would restart the
// Pods again).
const RestartedForAnnotation = "kubeadm.kubernetes.io/rotate-ca-restarted-for"

// caClient is an addon whose Pods read the CA of their service-account
// projection once, at start.
type caClient struct {
	kind, namespace, name string
}

func (c caClient) String() string { return c.kind + " " + c.namespace + "/" + c.name }

// caClients are the addons kubeadm installs whose clients read their CA
// once: kube-proxy and the cluster DNS (CoreDNS, or kube-dns).
func caClients() []caClient {
	return []caClient{
		{"DaemonSet", kubeproxy.Namespace, kubeproxy.Name},
		{"Deployment", coredns.Namespace, coredns.Name},
		{"Deployment", kubedns.Namespace, kubedns.Name},
	}
}

// workload is what restartClients reads of a DaemonSet or Deployment.
type workload struct {
	exists    bool
	restarted string // RestartedForAnnotation of its Pod template
	// done reports whether its rollout is complete, available counts
	// the Pods available and wanted those it wants.
	done              bool
	available, wanted int32
}

func (p *ControlPlane) readWorkload(ctx context.Context, c caClient) (workload, error) {
	apps := p.Client.AppsV1()
	var w workload
	switch c.kind {
	case "DaemonSet":
		ds, err := apps.DaemonSets(c.namespace).Get(ctx, c.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return w, nil
		}
		if err != nil {
			return w, err
		}
		s := ds.Status
		w = workload{true, ds.Spec.Template.Annotations[RestartedForAnnotation],
			s.ObservedGeneration >= ds.Generation && s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled,
			s.NumberAvailable, s.DesiredNumberScheduled}
	default:
		d, err := apps.Deployments(c.namespace).Get(ctx, c.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return w, nil
		}
		if err != nil {
			return w, err
		}
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		s := d.Status
		w = workload{true, d.Spec.Template.Annotations[RestartedForAnnotation],
			s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == n && s.Replicas == n && s.AvailableReplicas == n,
			s.AvailableReplicas, n}
	}
	return w, nil
}

// restartClients restarts, once the cluster trusts next too, the Pods of
// the addons whose clients read their CA only at start (kube-proxy, the
// cluster DNS), so that they trust the new CA before sign makes the API
// server present a certificate of it: a rollout, as "kubectl rollout
// restart" makes, marked with RestartedForAnnotation. A rollout already
// marked for next is not made again, only waited for. The wait ends when
// every Pod runs the new template and as many are available as before
// (an addon that was not available before is not waited for).
func (p *ControlPlane) restartClients(ctx context.Context, next string) error {
	for _, c := range caClients() {
		w, err := p.readWorkload(ctx, c)
		if err != nil {
			return fmt.Errorf("reading %s: %w", c, err)
		}
		if !w.exists {
			continue
		}
		if w.restarted != next {
			patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, RestartedForAnnotation, next)
			apps := p.Client.AppsV1()
			if c.kind == "DaemonSet" {
				_, err = apps.DaemonSets(c.namespace).Patch(ctx, c.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			} else {
				_, err = apps.Deployments(c.namespace).Patch(ctx, c.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			}
			if err != nil {
				return fmt.Errorf("restarting the Pods of %s: %w", c, err)
			}
			fmt.Fprintf(p.Out, "[rotate-ca] Restarting the Pods of %s, whose clients read the CA only at start\n", c)
		}
		if w.available < w.wanted {
			continue
		}
		if err := p.waitRolledOut(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// waitRolledOut waits until the rollout of c is complete.
func (p *ControlPlane) waitRolledOut(ctx context.Context, c caClient) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	for {
		w, err := p.readWorkload(ctx, c)
		if err == nil && (!w.exists || w.done) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d of %d Pods available on the new template", w.available, w.wanted)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Pods of %s were not restarted within %v: %w", c, p.Timeout, err)
		case <-time.After(p.interval()):
		}
	}
}
