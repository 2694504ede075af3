package podrestart

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/cri"
)

// fakeRuntime runs one container per component; stopping it makes the
// "kubelet" start a new one after restartAfter looks, unless never.
type fakeRuntime struct {
	mu           sync.Mutex
	running      map[string]string // component -> container ID
	stopped      []string
	looks        int
	restartAfter int
	never        bool
	stopErr      error
	listErr      error
	next         int
	pending      string // component waiting for its new container
}

func (f *fakeRuntime) ListContainers(_ context.Context, filter cri.ContainerFilter) ([]cri.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	comp := filter.Labels[labelContainerName]
	if filter.Labels[labelPodNamespace] != "kube-system" {
		return nil, errors.New("not filtered on kube-system")
	}
	if f.pending == comp && !f.never {
		if f.looks++; f.looks > f.restartAfter {
			f.next++
			f.running[comp] = comp + "-" + string(rune('a'+f.next))
			f.pending = ""
		}
	}
	id, ok := f.running[comp]
	if !ok {
		return nil, nil
	}
	return []cri.Container{{ID: id, State: cri.ContainerRunning, CreatedAt: time.Unix(int64(f.next), 0)},
		{ID: "old-exited", State: cri.ContainerExited}}, nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, grace time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopErr != nil {
		return f.stopErr
	}
	if grace <= 0 {
		return errors.New("no grace period")
	}
	f.stopped = append(f.stopped, id)
	for c, cid := range f.running {
		if cid == id {
			delete(f.running, c)
			f.pending = c
		}
	}
	return nil
}

func TestRestart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rt          *fakeRuntime
		healthy     func(url string, calls int) error
		wantErr     string
		wantStopped []string
	}{
		{
			name:        "restarted and healthy",
			rt:          &fakeRuntime{running: map[string]string{"kube-scheduler": "s1"}, restartAfter: 2},
			wantStopped: []string{"s1"},
		},
		{
			name: "healthy only after a few probes",
			rt:   &fakeRuntime{running: map[string]string{"kube-scheduler": "s1"}},
			healthy: func(_ string, calls int) error {
				if calls < 3 {
					return errors.New("connection refused")
				}
				return nil
			},
			wantStopped: []string{"s1"},
		},
		{
			name:        "the kubelet never starts it again",
			rt:          &fakeRuntime{running: map[string]string{"kube-scheduler": "s1"}, never: true},
			wantErr:     "kube-scheduler not healthy after 50ms: the kubelet has not started a new container yet",
			wantStopped: []string{"s1"},
		},
		{
			name:        "the new one never answers",
			rt:          &fakeRuntime{running: map[string]string{"kube-scheduler": "s1"}},
			healthy:     func(string, int) error { return errors.New("HTTP 500: not ok") },
			wantErr:     "kube-scheduler not healthy after 50ms: https://127.0.0.1:10259/healthz: HTTP 500: not ok",
			wantStopped: []string{"s1"},
		},
		{
			name:    "the runtime refuses to stop it",
			rt:      &fakeRuntime{running: map[string]string{"kube-scheduler": "s1"}, stopErr: errors.New("permission denied")},
			wantErr: "stopping the kube-scheduler container s1: permission denied",
		},
		{
			name:    "the runtime cannot list",
			rt:      &fakeRuntime{listErr: errors.New("unavailable")},
			wantErr: "listing the containers of kube-scheduler: unavailable",
		},
		{
			name: "none runs: waits for one",
			rt:   &fakeRuntime{running: map[string]string{}, pending: "kube-scheduler", restartAfter: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			r := &Restarter{
				Runtime: tc.rt, Timeout: 50 * time.Millisecond, Interval: time.Millisecond,
				Healthy: func(_ context.Context, url string) error {
					calls++
					if tc.healthy != nil {
						return tc.healthy(url, calls)
					}
					return nil
				},
			}
			err := r.Restart(context.Background(), "kube-scheduler", "https://127.0.0.1:10259/healthz")
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if strings.Join(tc.rt.stopped, ",") != strings.Join(tc.wantStopped, ",") {
				t.Errorf("stopped %v, want %v", tc.rt.stopped, tc.wantStopped)
			}
		})
	}
}
