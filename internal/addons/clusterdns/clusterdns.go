package clusterdns

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Names both addons share: their Pods carry the label k8s-app=kube-dns,
// which the kube-dns Service selects.
const (
	Namespace   = metav1.NamespaceSystem
	ServiceName = "kube-dns"
	LabelKey    = "k8s-app"
	LabelValue  = "kube-dns"

	// templateHashLabel is the label a Deployment gives the Pods of one
	// version of its template (the pod-template-hash of their
	// ReplicaSet), and revisionAnnotation the revision a Deployment and
	// its ReplicaSets carry.
	templateHashLabel  = "pod-template-hash"
	revisionAnnotation = "deployment.kubernetes.io/revision"
)

// Addon is one DNS addon as Install sees it.
type Addon struct {
	// Name is how messages call it: "CoreDNS", "kube-dns".
	Name string
	// Deployment is the name of its Deployment in kube-system.
	Deployment string
	// Service is its kube-dns Service (selector k8s-app=kube-dns).
	Service *corev1.Service
	// Apply creates or replaces its objects, the Service only when
	// withService is set. It must be idempotent.
	Apply func(ctx context.Context, cs kubernetes.Interface, withService bool) error
}

// Options are the waits and the output of Install. Zero values take the
// defaults.
type Options struct {
	Out    io.Writer
	DryRun bool
	// Timeout bounds each wait of a switch (the new Pods being ready,
	// the Service leaving the old ones, the old ones being gone).
	Timeout time.Duration
	// Settle is how long the old Pods keep serving after the Service
	// stopped listing them: the time kube-proxy on every node needs to
	// stop sending them queries.
	Settle time.Duration
	// Interval is the pause between two looks at the cluster.
	Interval time.Duration
	// Sleep waits d (time.Sleep unless the context ends); tests swap it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Minute
	DefaultSettle   = 5 * time.Second
	DefaultInterval = time.Second
)

func (o Options) withDefaults() Options {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
				return nil
			}
		}
	}
	return o
}

// Install makes target the cluster's DNS addon. When the Deployment of
// one of others runs, it switches: target's objects but the Service are
// applied and Install waits for all of target's Pods to be ready; then
// the Service is narrowed to them (by their pod-template-hash) and, once
// its endpoints list only them and kube-proxy had Settle to follow, the
// other Deployments are deleted and their Pods awaited; last the Service
// gets target's own form back (selector k8s-app=kube-dns). The Service
// and its cluster IP are never replaced, and some ready Pod stays behind
// it throughout. The other addons' ConfigMaps, ServiceAccounts and roles
// are kept (a switch back finds its configuration again).
//
// Idempotent and re-entrant: a run cut short at any step is finished by
// running Install again (a narrowed Service is put back by the last step,
// which a plain install runs too). When target's Pods never become ready,
// Install fails and both addons stay, the old one serving. Under DryRun
// nothing is awaited: the writes are made (the dry-run client prints
// them) and the other Deployments deleted.
func Install(ctx context.Context, cs kubernetes.Interface, target Addon, others []Addon, o Options) error {
	o = o.withDefaults()
	var old []Addon
	for _, a := range others {
		if a.Deployment == target.Deployment {
			continue
		}
		_, err := cs.AppsV1().Deployments(Namespace).Get(ctx, a.Deployment, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading Deployment %s/%s: %w", Namespace, a.Deployment, err)
		default:
			old = append(old, a)
		}
	}
	if len(old) == 0 {
		return target.Apply(ctx, cs, true)
	}
	names := make([]string, len(old))
	for i, a := range old {
		names[i] = a.Name
	}
	fmt.Fprintf(o.Out, "[addons] Replacing %s by %s behind the %s Service\n", strings.Join(names, ", "), target.Name, ServiceName)
	if o.DryRun {
		if err := target.Apply(ctx, cs, true); err != nil {
			return err
		}
		return deleteDeployments(ctx, cs, old)
	}
	if err := target.Apply(ctx, cs, false); err != nil {
		return err
	}
	hash, err := waitReady(ctx, cs, target.Deployment, o)
	if err != nil {
		return fmt.Errorf("%s did not become ready (%s keeps serving): %w", target.Name, strings.Join(names, ", "), err)
	}
	fmt.Fprintf(o.Out, "[addons] Every %s Pod is ready; the %s Service now selects only them\n", target.Name, ServiceName)
	narrowed := target.Service.DeepCopy()
	narrowed.Spec.Selector = map[string]string{LabelKey: LabelValue, templateHashLabel: hash}
	if err := apiclient.ReplaceService(ctx, cs, narrowed); err != nil {
		return fmt.Errorf("pointing Service %s/%s at the %s Pods: %w", Namespace, ServiceName, target.Name, err)
	}
	prefix := target.Deployment + "-" + hash + "-"
	if err := apiclient.Poll(ctx, o.Interval, o.Timeout, func(ctx context.Context) (bool, error) {
		return onlyEndpoints(ctx, cs, prefix)
	}); err != nil {
		return fmt.Errorf("waiting for Service %s/%s to list only the %s Pods: %w", Namespace, ServiceName, target.Name, err)
	}
	if err := o.Sleep(ctx, o.Settle); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "[addons] Deleting the Deployment of %s\n", strings.Join(names, ", "))
	if err := deleteDeployments(ctx, cs, old); err != nil {
		return err
	}
	if err := apiclient.Poll(ctx, o.Interval, o.Timeout, func(ctx context.Context) (bool, error) {
		return onlyPods(ctx, cs, target.Deployment+"-")
	}); err != nil {
		return fmt.Errorf("waiting for the Pods of %s to go: %w", strings.Join(names, ", "), err)
	}
	return target.Apply(ctx, cs, true)
}

// waitReady waits until every replica of the Deployment runs its current
// template and is available, and returns that template's
// pod-template-hash.
func waitReady(ctx context.Context, cs kubernetes.Interface, name string, o Options) (string, error) {
	var hash string
	err := apiclient.Poll(ctx, o.Interval, o.Timeout, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, apiclient.Retry(err)
		}
		if !rolledOut(d) {
			return false, apiclient.Retry(fmt.Errorf("%d of the %d replicas of Deployment %s/%s are updated and available", d.Status.AvailableReplicas, replicas(d), Namespace, name))
		}
		h, err := currentHash(ctx, cs, d)
		if err != nil || h == "" {
			return false, apiclient.Retry(fmt.Errorf("finding the current ReplicaSet of Deployment %s/%s: %v", Namespace, name, err))
		}
		hash = h
		return true, nil
	})
	return hash, err
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// rolledOut reports whether the controller has seen d's latest spec and
// every replica runs its current template, available, with no other left.
func rolledOut(d *appsv1.Deployment) bool {
	n := replicas(d)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == n && s.AvailableReplicas == n && s.Replicas == n
}

// currentHash is the pod-template-hash of d's ReplicaSet of d's revision.
func currentHash(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) (string, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", err
	}
	list, err := cs.AppsV1().ReplicaSets(Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", err
	}
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, d) && rs.Annotations[revisionAnnotation] == d.Annotations[revisionAnnotation] {
			return rs.Labels[templateHashLabel], nil
		}
	}
	return "", nil
}

// onlyEndpoints reports whether the Service's EndpointSlices list at least
// one ready endpoint and only Pods whose names start with prefix.
func onlyEndpoints(ctx context.Context, cs kubernetes.Interface, prefix string) (bool, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + ServiceName})
	if err != nil {
		return false, apiclient.Retry(err)
	}
	ready := 0
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || !strings.HasPrefix(e.TargetRef.Name, prefix) {
				return false, nil
			}
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
	}
	return ready > 0, nil
}

// onlyPods reports whether every DNS Pod's name starts with prefix.
func onlyPods(ctx context.Context, cs kubernetes.Interface, prefix string) (bool, error) {
	list, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelKey + "=" + LabelValue})
	if err != nil {
		return false, apiclient.Retry(err)
	}
	for _, p := range list.Items {
		if !strings.HasPrefix(p.Name, prefix) {
			return false, nil
		}
	}
	return true, nil
}

// deleteDeployments deletes the Deployments of old (an absent one is
// fine); their Pods go with them.
func deleteDeployments(ctx context.Context, cs kubernetes.Interface, old []Addon) error {
	for _, a := range old {
		err := apiclient.RetryWrite(ctx, func() error {
			return cs.AppsV1().Deployments(Namespace).Delete(ctx, a.Deployment, metav1.DeleteOptions{})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Deployment %s/%s: %w", Namespace, a.Deployment, err)
		}
	}
	return nil
}
