package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// ClusterAdminsGroup is the group of admin.conf's identity; the
// ClusterRoleBinding of the same name grants it cluster-admin.
const ClusterAdminsGroup = "kubeadm:cluster-admins"

// Client-side rate limits of every client kubeadm makes. client-go's
// defaults (5 requests a second after a burst of 10) would make the few
// dozen objects init writes wait on the client for seconds; the API
// server's own flow control protects it.
const (
	clientQPS   = 100
	clientBurst = 200
)

// FromKubeconfig builds a client from a kubeconfig file. Each of its
// requests gives up after requestTimeout (see RequestTimeout).
func FromKubeconfig(path string, requestTimeout time.Duration) (kubernetes.Interface, *rest.Config, error) {
	return fromKubeconfig(path, "", requestTimeout)
}

// FromKubeconfigAt is FromKubeconfig with the API server's URL replaced by
// server: the file's credentials and CA, another address (this node's own
// API server rather than the load balancer the file names, say).
func FromKubeconfigAt(path, server string, requestTimeout time.Duration) (kubernetes.Interface, error) {
	c, _, err := fromKubeconfig(path, server, requestTimeout)
	return c, err
}

// fromKubeconfig builds a client from a kubeconfig file, at server
// unless it is "". The rest.Config returned is the one the client was
// made from, its request timeout and rate limit included.
func fromKubeconfig(path, server string, requestTimeout time.Duration) (kubernetes.Interface, *rest.Config, error) {
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg, err := kubeconfig.RESTConfig(kc, server)
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg = clientConfig(cfg, requestTimeout)
	c, err := newClientset(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("client from kubeconfig %s: %w", path, err)
	}
	return c, cfg, nil
}

// FromConfig builds a client from an in-memory kubeconfig (its
// current context), whose requests give up after requestTimeout (see
// RequestTimeout).
func FromConfig(kc *clientcmdapi.Config, requestTimeout time.Duration) (kubernetes.Interface, error) {
	cfg, err := kubeconfig.RESTConfig(kc, "")
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	return FromRESTConfig(cfg, requestTimeout)
}

// FromRESTConfig builds a client of the server cfg describes, whose
// requests give up after requestTimeout (see RequestTimeout); cfg itself
// is left as it is.
func FromRESTConfig(cfg *rest.Config, requestTimeout time.Duration) (kubernetes.Interface, error) {
	c, err := newClientset(clientConfig(cfg, requestTimeout))
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", cfg.Host, err)
	}
	return c, nil
}

// clientConfig returns a copy of cfg with the request timeout, the
// client-side rate limit and the content type of every client kubeadm
// makes. The content type is JSON, where client-go's typed clients would
// default to protobuf: the bodies that -v=8 and above log stay readable
// (with the data of Secrets hidden by internal/redact, which leaves out a
// binary body whole).
func clientConfig(cfg *rest.Config, requestTimeout time.Duration) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.Timeout = RequestTimeout(requestTimeout)
	cfg.ContentType = runtime.ContentTypeJSON
	return cfg
}

// newClientset returns client-go's clientset of the server cfg describes,
// with the bounds of every client kubeadm makes: each response body is
// capped at boundedread.MaxAPIResponse, and redirects are followed only on
// the same host, never from https to http (redirectpolicy.SameHost); a
// refusal without a reason says what was refused and to whom
// (ExplainRefusals). cfg's Timeout bounds each request (see
// RequestTimeout). As client-go's
// kubernetes.NewForConfig, the requests name the program and its version
// in their User-Agent unless cfg names another.
func newClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	capped := rest.CopyConfig(cfg)
	if capped.UserAgent == "" {
		capped.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	capped.Wrap(boundedread.Transport(boundedread.MaxAPIResponse))
	capped.Wrap(ExplainRefusals(cfg))
	hc, err := rest.HTTPClientFor(capped)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = redirectpolicy.SameHost
	return kubernetes.NewForConfigAndClient(capped, hc)
}

// Poll calls fn every interval until it reports done, returns an error, or
// timeout passes (then the last error, if any, is returned with the
// timeout). fn's transient failures are returned as (false, nil) or as an
// error wrapped in Retry.
func Poll(ctx context.Context, interval, timeout time.Duration, fn func(context.Context) (bool, error)) error {
	return PollBackoff(ctx, interval, interval, timeout, fn)
}

// PollBackoff is Poll with a pause that starts at first and doubles after
// each try up to max: for a condition that is usually met a moment after
// the first try, without asking often for long when it is not.
func PollBackoff(ctx context.Context, first, max, timeout time.Duration, fn func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	interval := first
	for {
		done, err := fn(ctx)
		var r *retryable
		switch {
		case errors.As(err, &r):
			// An attempt the deadline cut short only says that time ran
			// out; the error before it says why the condition was not met.
			if last == nil || ctx.Err() == nil {
				last = r.err
			}
		case err != nil:
			return err
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %v: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %v", timeout)
		case <-time.After(interval):
		}
		interval = min(2*interval, max)
	}
}

type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// Retry marks err as worth another try inside Poll.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &retryable{err}
}

// createUpdater is what a typed client of client-go offers for one
// resource (c.CoreV1().ConfigMaps(ns), say).
type createUpdater[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

type creator[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
}

// CreateOrUpdate creates obj, or replaces the existing object of that name
// with it. Running it again with the same obj changes nothing. Conflicts
// and transient failures (see Transient) are retried a bounded number of
// times (writeAttempts) before the last error is returned.
//
//	apiclient.CreateOrUpdate(ctx, c.CoreV1().ConfigMaps("kube-system"), cm)
func CreateOrUpdate[T any](ctx context.Context, c createUpdater[T], obj T) error {
	return RetryWrite(ctx, func() error {
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err == nil || !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err := c.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// CreateIfMissing creates obj and leaves an existing object of that name
// alone. Transient failures are retried as in CreateOrUpdate.
func CreateIfMissing[T any](ctx context.Context, c creator[T], obj T) error {
	return RetryWrite(ctx, func() error {
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// ReplaceService creates svc or replaces the Service of that name (its
// ResourceVersion should be "0": an update is then unconditional). Unlike
// for other kinds, creating a Service that exists does not fail with
// AlreadyExists when it asks for a cluster IP: the taken address makes it
// Invalid. So the Service is looked up first.
func ReplaceService(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) error {
	services := cs.CoreV1().Services(svc.Namespace)
	return RetryWrite(ctx, func() error {
		_, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = services.Create(ctx, svc, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Created meanwhile.
				_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
			}
			return err
		case err != nil:
			return err
		}
		_, err = services.Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
}

// Bounds of the retries of one write: attempts, and the first pause
// between them, doubled after each (50+100+200+400 ms at most in all).
const (
	writeAttempts = 5
	writeBackoff  = 50 * time.Millisecond
)

// RetryWrite runs write until it succeeds, fails for good (an error that
// is not Transient), or writeAttempts are used up; then it returns write's
// last error. write must be safe to run again. A write that timed out on
// the client's side is not tried again: the server had the whole request
// timeout (timeouts.kubernetesAPICall) to answer, and trying again would
// make the write wait a multiple of it.
func RetryWrite(ctx context.Context, write func() error) error {
	pause := writeBackoff
	for attempt := 1; ; attempt++ {
		err := write()
		if err == nil || attempt == writeAttempts || !Transient(err) || clientTimeout(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// Transient reports whether a failed API call is worth another try: a
// conflict with a concurrent writer, a server that is busy, timing out or
// briefly failing, or a connection that broke.
func Transient(err error) bool {
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err):
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}

// clientTimeout reports whether a request failed because the client
// stopped waiting for the answer: its context's deadline or the client's
// timeout passed, or a connection or handshake attempt timed out.
func clientTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// AdminClient returns a client with admin.conf's credentials, making sure
// they are authorized first; each request of the client, as the wait
// itself, is bounded by timeout (timeouts.kubernetesAPICall). admin.conf's identity is only a member of the
// kubeadm:cluster-admins group; until the ClusterRoleBinding of that name
// exists it is forbidden everything, so on the first Forbidden answer the
// binding is created with super-admin.conf (group system:masters) and the
// admin client is tried again until it works or timeout passes. The API
// server's authorizer learns of a new binding within milliseconds, so the
// tries start 10 ms apart (upstream waits 500 ms, on every new cluster).
// When server is not "", both files are used at that URL instead of the
// one they name.
func AdminClient(ctx context.Context, adminConf, superAdminConf, server string, timeout time.Duration) (kubernetes.Interface, error) {
	admin, _, err := fromKubeconfig(adminConf, server, timeout)
	if err != nil {
		return nil, err
	}
	var super kubernetes.Interface
	err = PollBackoff(ctx, 10*time.Millisecond, 500*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		_, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, ClusterAdminsGroup, metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			if super == nil {
				s, _, err := fromKubeconfig(superAdminConf, server, timeout)
				if err != nil {
					return false, err
				}
				super = s
			}
			if err := CreateIfMissing(ctx, super.RbacV1().ClusterRoleBindings(), ClusterAdminsBinding()); err != nil {
				return false, Retry(fmt.Errorf("creating ClusterRoleBinding %s with %s: %w", ClusterAdminsGroup, superAdminConf, err))
			}
			return false, Retry(fmt.Errorf("%s is not authorized yet: %w", adminConf, err))
		default:
			return false, Retry(err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s to be authorized: %w", adminConf, err)
	}
	return admin, nil
}

// ClusterAdminsBinding grants the kubeadm:cluster-admins group cluster-admin.
func ClusterAdminsBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterAdminsGroup},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: ClusterAdminsGroup}},
	}
}
