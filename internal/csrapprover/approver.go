package csrapprover

import (
	"context"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// API is what the approver does with the API server.
type API interface {
	// ListCSRs lists every certificate signing request.
	ListCSRs(ctx context.Context) (*certificatesv1.CertificateSigningRequestList, error)
	// WatchCSRs watches the requests from resourceVersion on.
	WatchCSRs(ctx context.Context, resourceVersion string) (watch.Interface, error)
	// ListNodes lists every Node (their addresses say which names and
	// addresses each node may have in its serving certificate).
	ListNodes(ctx context.Context) ([]corev1.Node, error)
	// Approve stores csr's approval (its conditions).
	Approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error
}

// ApprovalReason is the reason of the Approved condition the approver adds.
const ApprovalReason = "KubeadmKubeletServingApproved"

// Approver approves the kubelets' serving certificate requests that pass
// Check. The zero value is not usable: API must be set.
type Approver struct {
	API API
	// Log receives one line per decision and per error (nil: none).
	Log func(format string, args ...any)
	// Resync is how often every request is looked at again, for those
	// that were refused while their Node lacked an address (default 30s).
	Resync time.Duration
	// Now dates approvals (default time.Now).
	Now func() time.Time

	refused map[types.UID]string
	// nodes, listed at nodesAt, serve the requests handled until
	// nodesMaxAge passes.
	nodes   []corev1.Node
	nodesAt time.Time
}

// nodesMaxAge is how long one list of the Nodes serves: a resync looks at
// every pending request at once, and one list serves them all.
const nodesMaxAge = 5 * time.Second

func (a *Approver) logf(format string, args ...any) {
	if a.Log != nil {
		a.Log(format, args...)
	}
}

func (a *Approver) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Run lists and watches the requests until ctx ends, approving what passes
// Check, and looks at every pending one again each Resync. API errors are
// logged and retried after a pause that grows to 30 seconds, but for
// Unauthorized: its credential expired or was replaced, so Run returns
// the error and the process ends, for the kubelet to restart its container
// with the kubeconfig file as it is now. Otherwise Run returns only ctx's
// error.
func (a *Approver) Run(ctx context.Context) error {
	if a.API == nil {
		return errNoAPI
	}
	resync := a.Resync
	if resync <= 0 {
		resync = 30 * time.Second
	}
	pause := time.Second
	for {
		started := time.Now()
		err := a.round(ctx, resync)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := time.Duration(0)
		switch {
		case apierrors.IsUnauthorized(err):
			return err
		case err != nil:
			a.logf("%v; trying again in %v", err, pause)
			wait = pause
			pause = min(2*pause, 30*time.Second)
		case time.Since(started) < time.Second:
			// A watch the server ended at once: list again, not in a
			// tight loop.
			wait = time.Second
		default:
			pause = time.Second
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// round lists every request, handles them, then watches for changes until
// resync passes or the watch ends.
func (a *Approver) round(ctx context.Context, resync time.Duration) error {
	list, err := a.API.ListCSRs(ctx)
	if err != nil {
		return fmt.Errorf("listing the certificate signing requests: %w", err)
	}
	for i := range list.Items {
		a.Handle(ctx, &list.Items[i])
	}
	wctx, cancel := context.WithTimeout(ctx, resync)
	defer cancel()
	w, err := a.API.WatchCSRs(wctx, list.ResourceVersion)
	if err != nil {
		if wctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("watching the certificate signing requests: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-wctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if csr, ok := ev.Object.(*certificatesv1.CertificateSigningRequest); ok {
					a.Handle(ctx, csr)
				}
			case watch.Error:
				return fmt.Errorf("watching the certificate signing requests: %v", apierrors.FromObject(ev.Object))
			}
		}
	}
}

// Handle approves csr when it is a pending kubelet serving request that
// passes Check; a refusal is logged once per request. It reports whether
// it approved csr.
func (a *Approver) Handle(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) bool {
	if !Ours(csr) {
		return false
	}
	var nodes []corev1.Node
	if name := NodeName(csr); name != "" {
		var err error
		if nodes, err = a.listNodes(ctx); err != nil {
			a.logf("certificate signing request %s: listing the Nodes: %v", csr.Name, err)
			return false
		}
	}
	if err := Check(csr, nodes); err != nil {
		if a.refused == nil {
			a.refused = map[types.UID]string{}
		}
		if a.refused[csr.UID] != err.Error() {
			a.refused[csr.UID] = err.Error()
			a.logf("certificate signing request %s of %q left pending: %v", csr.Name, csr.Spec.Username, err)
		}
		return false
	}
	approved := csr.DeepCopy()
	approved.Status.Conditions = append(approved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         ApprovalReason,
		Message:        "kubeadm approved this kubelet serving certificate: its names are its Node's addresses",
		LastUpdateTime: metav1.NewTime(a.now()),
	})
	err := a.API.Approve(ctx, approved)
	switch {
	case err == nil:
		delete(a.refused, csr.UID)
		a.logf("approved certificate signing request %s of %q", csr.Name, csr.Spec.Username)
		return true
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Another approver (of another control-plane node) was first, or
		// the request is gone: the next event or list says which.
		return false
	default:
		a.logf("approving certificate signing request %s: %v", csr.Name, err)
		return false
	}
}

// listNodes lists the Nodes, or returns the list made less than
// nodesMaxAge ago.
func (a *Approver) listNodes(ctx context.Context) ([]corev1.Node, error) {
	if a.nodes != nil && a.now().Sub(a.nodesAt) < nodesMaxAge {
		return a.nodes, nil
	}
	nodes, err := a.API.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	a.nodes, a.nodesAt = nodes, a.now()
	return nodes, nil
}

// errNoAPI is returned by Run without an API.
var errNoAPI = errors.New("the approver has no API client")
