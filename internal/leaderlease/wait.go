package leaderlease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Lease names the Lease a component competes for in leader election.
type Lease struct {
	Component string
	Namespace string
	Name      string
}

func (l Lease) String() string { return l.Namespace + "/" + l.Name }

// Of reads from component's command line the Lease it competes for:
// kube-system/<component> unless --leader-elect-resource-namespace or
// --leader-elect-resource-name say otherwise. ok is false when
// --leader-elect is off (the component then leads without a Lease). A
// Lease named only in a --config file is not seen: the default is assumed.
func Of(component string, argv []string) (l Lease, ok bool) {
	l = Lease{Component: component, Namespace: metav1.NamespaceSystem, Name: component}
	ok = true
	for _, a := range argv {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "leader-elect":
			if !hasValue {
				ok = true
			} else if b, err := strconv.ParseBool(value); err == nil {
				ok = b
			}
		case "leader-elect-resource-namespace":
			l.Namespace = value
		case "leader-elect-resource-name":
			l.Name = value
		}
	}
	return l, ok
}

// Waiter waits until restarted components (by an upgrade or its
// rollback, a certificate renewal, a CA rotation) lead again. A restarted component finds its Lease held by the identity
// of its previous process (or, after etcd's data was put back, by the one
// in that data) and, as client-go's leader election does, waits a whole
// lease duration from when it first read that record before it takes
// over, whatever the record's renewTime says: until then no controller
// runs or no Pod is scheduled. A Lease renewed after the wait began shows
// that some process (this node's or another's) leads now.
type Waiter struct {
	// Client reads the Leases; when nil, NewClient makes one at each
	// wait, so that a kubeconfig file renewed meanwhile is read again.
	Client    kubernetes.Interface
	NewClient func() (kubernetes.Interface, error)
	// Timeout bounds the wait for each Lease.
	Timeout time.Duration
	// Interval separates two reads of a Lease (0: 500ms).
	Interval time.Duration
	// Now is the clock renewTime is compared with (nil: time.Now).
	Now func() time.Time
	// Unreadable, when set, makes a wait that cannot read the Lease (no
	// client, or no answer for that long) end with a warning instead of an
	// error: whether the component leads is then unknown, not false. The
	// renewal sets it: a node without admin.conf, or with its endpoint
	// down, must not have its renewed files undone for that.
	Unreadable time.Duration
	Out        io.Writer
	Prefix     string // the output's "[phase]" tag
}

// Wait waits, for each of leaders in turn, until its Lease names a holder
// and was renewed after since. It fails naming the Lease, its holder and
// its renewTime when Timeout passes first.
func (w Waiter) Wait(ctx context.Context, leaders []Lease, since time.Time) error {
	if len(leaders) == 0 {
		return nil
	}
	if w.Client == nil {
		if w.NewClient == nil {
			return errors.New("no client to read the Leases with")
		}
		c, err := w.NewClient()
		if err != nil {
			err = fmt.Errorf("reaching the cluster to read the Leases: %w", err)
			if w.Unreadable > 0 {
				w.warnUnknown(leaders, err)
				return nil
			}
			return err
		}
		w.Client = c // w is a copy: the next wait makes its own
	}
	var errs []error
	for _, l := range leaders {
		if err := w.wait(ctx, l, since); err != nil {
			errs = append(errs, fmt.Errorf("%s does not lead: %w", l.Component, err))
		}
	}
	return errors.Join(errs...)
}

// Elects tells the control-plane components that take part in leader
// election (the names are the same for units and manifests).
func Elects(component string) bool {
	return component == "kube-controller-manager" || component == "kube-scheduler"
}

// WaitNode waits, for those of installed that elect a leader, until each
// leads again (a nil w waits for nothing): argv reads the command line
// that names the component's Lease (its unit's or its manifest's).
func (w *Waiter) WaitNode(ctx context.Context, installed []string, argv func(component string) ([]string, error)) error {
	if w == nil {
		return nil
	}
	since := w.now()
	var leaders []Lease
	var errs []error
	for _, c := range installed {
		if !Elects(c) {
			continue
		}
		a, err := argv(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the Lease %s competes for: %w", c, err))
			continue
		}
		if l, ok := Of(c, a); ok {
			leaders = append(leaders, l)
		}
	}
	errs = append(errs, w.Wait(ctx, leaders, since))
	return errors.Join(errs...)
}

func (w Waiter) wait(ctx context.Context, l Lease, since time.Time) error {
	now := w.now()
	fmt.Fprintf(w.Out, "%s Waiting up to %v for %s to lead: its Lease %s renewed after %s\n",
		w.Prefix, w.Timeout, l.Component, l, since.UTC().Format(time.RFC3339))
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	var last error
	read := false // some read was answered
	for {
		lease, err := w.Client.CoordinationV1().Leases(l.Namespace).Get(ctx, l.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			read = true
			last = fmt.Errorf("the Lease %s does not exist", l)
		case err != nil:
			last = fmt.Errorf("reading the Lease %s: %w", l, err)
			if !read && w.Unreadable > 0 && w.now().Sub(now) >= w.Unreadable && ctx.Err() == nil {
				w.warnUnknown([]Lease{l}, last)
				return nil
			}
		default:
			read = true
			holder, renewed := "", time.Time{}
			if lease.Spec.HolderIdentity != nil {
				holder = *lease.Spec.HolderIdentity
			}
			if lease.Spec.RenewTime != nil {
				renewed = lease.Spec.RenewTime.Time
			}
			if holder != "" && renewed.After(since) {
				fmt.Fprintf(w.Out, "%s %s leads (%q holds %s) after %v\n",
					w.Prefix, l.Component, holder, l, w.now().Sub(now).Round(100*time.Millisecond))
				return nil
			}
			last = fmt.Errorf("the Lease %s is held by %q, last renewed at %s", l, holder, renewed.UTC().Format(time.RFC3339Nano))
		}
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return fmt.Errorf("not within %v: %w", w.Timeout, last)
		case <-time.After(w.interval()):
		}
	}
}

// warnUnknown says that whether the components of leaders lead is not
// known, and why.
func (w Waiter) warnUnknown(leaders []Lease, err error) {
	for _, l := range leaders {
		fmt.Fprintf(w.Out, "%s WARNING: not waiting for %s to lead, as its Lease cannot be read: %v\n", w.Prefix, l.Component, err)
	}
}

func (w Waiter) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w Waiter) interval() time.Duration {
	if w.Interval <= 0 {
		return 500 * time.Millisecond
	}
	return w.Interval
}

// WaitRestarted waits, when component elects a leader (a nil w waits for
// nothing), until the Lease its command line argv names is renewed after
// since, the time its restart began: the controller manager does not give
// its Lease up when it stops, so its new process waits out a lease
// duration before it leads.
func (w *Waiter) WaitRestarted(ctx context.Context, component string, argv []string, since time.Time) error {
	if w == nil || !Elects(component) {
		return nil
	}
	l, ok := Of(component, argv)
	if !ok {
		return nil
	}
	return w.Wait(ctx, []Lease{l}, since)
}
