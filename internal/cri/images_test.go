package cri_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/cri/critest"
)

var clusterImages = []string{
	"registry.k8s.io/kube-apiserver:v1.36.3",
	"registry.k8s.io/kube-controller-manager:v1.36.3",
	"registry.k8s.io/kube-scheduler:v1.36.3",
	"registry.k8s.io/kube-proxy:v1.36.3",
	"registry.k8s.io/coredns/coredns:v1.13.1",
	pause,
	etcd,
}

// settled records what EnsureImages reported as done.
type settled struct {
	mu     sync.Mutex
	pulled []string
	found  []string
}

func (s *settled) done(image string, pulled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pulled {
		s.pulled = append(s.pulled, image)
	} else {
		s.found = append(s.found, image)
	}
}

func TestEnsureImagesPolicies(t *testing.T) {
	present := clusterImages[:2]
	missing := clusterImages[2:]
	tests := []struct {
		name      string
		policy    corev1.PullPolicy
		present   []string
		wantPulls []string
		wantFound []string
		wantErrs  []string // per image, "" for none
	}{
		{name: "always pulls every image", policy: corev1.PullAlways, present: present, wantPulls: clusterImages},
		{name: "if not present pulls the missing ones", policy: corev1.PullIfNotPresent, present: present,
			wantPulls: missing, wantFound: present},
		{name: "an empty policy means if not present", present: present, wantPulls: missing, wantFound: present},
		{name: "never with everything present", policy: corev1.PullNever, present: clusterImages, wantFound: clusterImages},
		{name: "never fails for each missing image", policy: corev1.PullNever, present: present, wantFound: present,
			wantErrs: []string{"", "", "image registry.k8s.io/kube-scheduler:v1.36.3 is not present and the image pull policy \"Never\" forbids pulling it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &critest.Server{Present: tt.present}
			rt := dial(t, critest.Start(t, srv))
			var s settled
			errs := cri.EnsureImages(context.Background(), rt, clusterImages, cri.PullOptions{Policy: tt.policy, Serial: true, Done: s.done})
			if len(errs) != len(clusterImages) {
				t.Fatalf("%d errors for %d images", len(errs), len(clusterImages))
			}
			for i, err := range errs {
				want := ""
				if i < len(tt.wantErrs) {
					want = tt.wantErrs[i]
				} else if tt.wantErrs != nil {
					want = "is not present"
				}
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: unexpected error %v", clusterImages[i], err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: error %v, want %q", clusterImages[i], err, want)
				}
			}
			if got := srv.Pulls(); !reflect.DeepEqual(got, tt.wantPulls) && len(got)+len(tt.wantPulls) > 0 {
				t.Errorf("pulls = %q, want %q", got, tt.wantPulls)
			}
			if !reflect.DeepEqual(s.pulled, tt.wantPulls) && len(s.pulled)+len(tt.wantPulls) > 0 {
				t.Errorf("reported pulled = %q, want %q", s.pulled, tt.wantPulls)
			}
			if !reflect.DeepEqual(s.found, tt.wantFound) && len(s.found)+len(tt.wantFound) > 0 {
				t.Errorf("reported present = %q, want %q", s.found, tt.wantFound)
			}
		})
	}
}

func TestEnsureImagesStatusErrors(t *testing.T) {
	broken := map[string]error{pause: status.Error(codes.Internal, "status broken")}
	// IfNotPresent pulls when it cannot tell.
	srv := &critest.Server{Present: []string{pause}, StatusErrors: broken}
	rt := dial(t, critest.Start(t, srv))
	if errs := cri.EnsureImages(context.Background(), rt, []string{pause}, cri.PullOptions{Serial: true}); errs[0] != nil {
		t.Errorf("IfNotPresent with a broken status: %v", errs[0])
	}
	if got := srv.Pulls(); !reflect.DeepEqual(got, []string{pause}) {
		t.Errorf("pulls = %q", got)
	}
	// Never cannot pull, so it must say it could not tell.
	errs := cri.EnsureImages(context.Background(), rt, []string{pause}, cri.PullOptions{Policy: corev1.PullNever})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "could not tell whether image "+pause+" is present") {
		t.Errorf("Never with a broken status: %v", errs[0])
	}
}

func TestEnsureImagesFailureDoesNotStopTheOthers(t *testing.T) {
	for _, serial := range []bool{true, false} {
		t.Run(fmt.Sprintf("serial=%v", serial), func(t *testing.T) {
			srv := &critest.Server{PullErrors: map[string]error{etcd: status.Error(codes.NotFound, "manifest unknown")}}
			rt := dial(t, critest.Start(t, srv))
			var s settled
			errs := cri.EnsureImages(context.Background(), rt, clusterImages, cri.PullOptions{Policy: corev1.PullAlways, Serial: serial, Done: s.done})
			for i, err := range errs {
				if clusterImages[i] == etcd {
					if err == nil || !strings.Contains(err.Error(), "failed to pull image "+etcd+": ") || status.Code(errors.Unwrap(err)) != codes.NotFound {
						t.Errorf("etcd: %v", err)
					}
				} else if err != nil {
					t.Errorf("%s: %v", clusterImages[i], err)
				}
			}
			want := slices.DeleteFunc(slices.Clone(clusterImages), func(s string) bool { return s == etcd })
			got := slices.Clone(s.pulled)
			slices.Sort(got)
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("pulled = %q, want %q", got, want)
			}
			if n := strings.Count(strings.Join(srv.Pulls(), " "), etcd); n != cri.DefaultPullAttempts {
				t.Errorf("etcd tried %d times, want %d", n, cri.DefaultPullAttempts)
			}
		})
	}
}

func TestEnsureImagesParallelOverlaps(t *testing.T) {
	// Each pull waits until three have started: only overlapping pulls
	// get through.
	srv := &critest.Server{HoldPulls: 3}
	rt := dial(t, critest.Start(t, srv))
	errs := cri.EnsureImages(context.Background(), rt, clusterImages, cri.PullOptions{Policy: corev1.PullAlways, Parallelism: 3})
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", clusterImages[i], err)
		}
	}
	if m := srv.MaxInFlight(); m != 3 {
		t.Errorf("%d pulls at once, want 3 (the bound)", m)
	}

	serial := &critest.Server{}
	rt = dial(t, critest.Start(t, serial))
	cri.EnsureImages(context.Background(), rt, clusterImages, cri.PullOptions{Policy: corev1.PullAlways, Serial: true})
	if m := serial.MaxInFlight(); m != 1 {
		t.Errorf("serial: %d pulls at once", m)
	}
	if got := serial.Pulls(); !reflect.DeepEqual(got, clusterImages) {
		t.Errorf("serial pulls = %q, want the list's order", got)
	}
}

func TestEnsureImagesStopsRetryingWhenCancelled(t *testing.T) {
	srv := &critest.Server{}
	rt := dial(t, critest.Start(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := cri.EnsureImages(ctx, rt, []string{etcd}, cri.PullOptions{Policy: corev1.PullAlways, Serial: true})
	if errs[0] == nil || len(srv.Pulls()) > 0 {
		t.Errorf("cancelled: error %v, pulls %q", errs[0], srv.Pulls())
	}
}
