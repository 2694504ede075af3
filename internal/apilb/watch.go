package apilb

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// The EndpointSlice every API server writes its own address into.
const (
	EndpointSliceNamespace = "default"
	EndpointSliceName      = "kubernetes"
)

// watchSeconds is how long one watch request lasts on the server; it must
// stay below the client's request timeout, which also bounds a watch.
const watchSeconds = 20

// UpstreamsOf returns the ready API server addresses of the `kubernetes`
// EndpointSlice: each ready endpoint's addresses with the slice's https
// port (or its only port). An endpoint whose ready condition is unset
// counts as ready, as the EndpointSlice API says.
func UpstreamsOf(s *discoveryv1.EndpointSlice) []string {
	var port int32
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		if (p.Name != nil && *p.Name == "https") || len(s.Ports) == 1 {
			port = *p.Port
		}
	}
	if port == 0 {
		return nil
	}
	var out []string
	for _, e := range s.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		for _, a := range e.Addresses {
			out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
		}
	}
	return out
}

// Watch follows the `kubernetes` EndpointSlice until ctx ends and calls
// update with each non-empty list of upstreams it finds (an empty one is
// a passing state, for example while the only API server restarts, and is
// ignored). Each watch request, which lasts about 20 s, gets a client from
// newClient, so credentials rotated on disk are picked up. Failed requests
// are retried after retry.
func Watch(ctx context.Context, newClient func() (kubernetes.Interface, error), retry time.Duration, update func([]string)) {
	for ctx.Err() == nil {
		c, err := newClient()
		if err == nil {
			err = watchOnce(ctx, c, update)
		}
		if err != nil && ctx.Err() == nil {
			klog.V(1).Infof("watching EndpointSlice %s/%s: %v", EndpointSliceNamespace, EndpointSliceName, err)
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
		}
	}
}

// watchOnce runs one watch request. Without a resourceVersion the server
// first sends the slice as it is now, so every round starts from the
// current state.
func watchOnce(ctx context.Context, c kubernetes.Interface, update func([]string)) error {
	timeout := int64(watchSeconds)
	w, err := c.DiscoveryV1().EndpointSlices(EndpointSliceNamespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:  fields.OneTermEqualSelector("metadata.name", EndpointSliceName).String(),
		TimeoutSeconds: &timeout,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				s, ok := ev.Object.(*discoveryv1.EndpointSlice)
				if !ok {
					return fmt.Errorf("unexpected object %T", ev.Object)
				}
				if list := UpstreamsOf(s); len(list) > 0 {
					update(list)
				}
			case watch.Error:
				return fmt.Errorf("watch error: %v", ev.Object)
			}
		}
	}
}
