package noderole

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Labels kubeadm puts on, or looks for on, control-plane nodes.
const (
	// ControlPlaneLabel marks a control-plane node (empty value).
	ControlPlaneLabel = "node-role.kubernetes.io/control-plane"
	// ExcludeFromExternalLoadBalancersLabel keeps the node out of the
	// backends of LoadBalancer Services (empty value).
	ExcludeFromExternalLoadBalancersLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
	// HostnameLabel is set by the kubelet when it registers the Node;
	// marking waits for it, so it does not race the registration.
	HostnameLabel = "kubernetes.io/hostname"
)

// ControlPlaneLabels returns the labels MarkControlPlane sets, in the
// order kubeadm reports them. Each has an empty value.
func ControlPlaneLabels() []string {
	return []string{ControlPlaneLabel, ExcludeFromExternalLoadBalancersLabel}
}

// Options tune MarkControlPlane's wait for the Node.
type Options struct {
	// Interval is the pause between two tries (default 100ms: in init the
	// kubelet registers its Node about when the API server turns healthy,
	// and every pause after that is time lost).
	Interval time.Duration
	// Timeout bounds the whole operation (default one minute).
	Timeout time.Duration
}

// MarkControlPlane waits until the Node called name exists and carries
// HostnameLabel (set by its kubelet), then makes sure it has
// ControlPlaneLabels (with empty values) and taints, placed before the
// Node's other taints as upstream kubeadm places them (see mergeTaints).
// The patch carries the Node's resourceVersion, so a concurrent change
// makes it fail and be retried on fresh data instead of overwriting the
// other writer's taints.
//
// It is idempotent: a Node that already has everything is not patched.
// Failures to read or patch the Node are retried until opts.Timeout; the
// last one is then returned.
func MarkControlPlane(ctx context.Context, c kubernetes.Interface, name string, taints []corev1.Taint, opts Options) error {
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	err := apiclient.Poll(ctx, opts.Interval, opts.Timeout, func(ctx context.Context) (bool, error) {
		node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, apiclient.Retry(fmt.Errorf("reading Node %s: %w", name, err))
		}
		if _, ok := node.Labels[HostnameLabel]; !ok {
			return false, apiclient.Retry(fmt.Errorf("the Node %s has no %s label yet (its kubelet sets it when it registers the Node)", name, HostnameLabel))
		}
		patch, changed, err := controlPlanePatch(node, taints)
		if err != nil {
			return false, err
		}
		if !changed {
			return true, nil
		}
		_, err = c.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err):
			return false, apiclient.Retry(fmt.Errorf("patching Node %s: it changed meanwhile: %w", name, err))
		default:
			return false, apiclient.Retry(fmt.Errorf("patching Node %s: %w", name, err))
		}
	})
	if err != nil {
		return fmt.Errorf("marking Node %s as a control-plane node: %w", name, err)
	}
	return nil
}

// controlPlanePatch returns the strategic merge patch that gives node the
// control-plane labels and taints, and whether anything is missing. The
// taint list is sent whole (Node taints are replaced, not merged, by a
// patch), guarded by the Node's resourceVersion.
func controlPlanePatch(node *corev1.Node, taints []corev1.Taint) ([]byte, bool, error) {
	labels := map[string]string{}
	for _, l := range ControlPlaneLabels() {
		if v, ok := node.Labels[l]; !ok || v != "" {
			labels[l] = ""
		}
	}
	merged := mergeTaints(taints, node.Spec.Taints)
	retaint := !sameTaints(merged, node.Spec.Taints)
	if len(labels) == 0 && !retaint {
		return nil, false, nil
	}
	type meta struct {
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels,omitempty"`
	}
	type spec struct {
		Taints []corev1.Taint `json:"taints"`
	}
	p := struct {
		Metadata meta  `json:"metadata"`
		Spec     *spec `json:"spec,omitempty"`
	}{Metadata: meta{ResourceVersion: node.ResourceVersion, Labels: labels}}
	if retaint {
		p.Spec = &spec{Taints: merged}
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the patch of Node %s: %w", node.Name, err)
	}
	return b, true, nil
}

// mergeTaints returns the taints a control-plane Node ends up with, in
// upstream kubeadm's order: the wanted taints first, in their order, then
// the Node's other taints. A wanted taint the Node already has (same key,
// value and effect) is kept as the Node has it (with its timeAdded); one
// the Node has with another value replaces it (upstream instead sends both
// and the API server refuses the duplicate key and effect).
func mergeTaints(want, have []corev1.Taint) []corev1.Taint {
	merged := make([]corev1.Taint, 0, len(want)+len(have))
	for _, w := range want {
		if hasTaint(merged, w) {
			continue
		}
		t := w
		for _, h := range have {
			if h.MatchTaint(&w) && h.Value == w.Value {
				t = h
				break
			}
		}
		merged = append(merged, t)
	}
	for _, h := range have {
		if !hasTaint(merged, h) {
			merged = append(merged, h)
		}
	}
	return merged
}

// sameTaints reports whether two taint lists are equal, order included.
func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect ||
			!a[i].TimeAdded.Equal(b[i].TimeAdded) {
			return false
		}
	}
	return true
}

// hasTaint reports whether list has a taint with t's key and effect.
func hasTaint(list []corev1.Taint, t corev1.Taint) bool {
	for _, have := range list {
		if have.MatchTaint(&t) {
			return true
		}
	}
	return false
}
