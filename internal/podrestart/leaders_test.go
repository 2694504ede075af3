package podrestart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease/leasetest"
)

const schedulerManifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-scheduler
  namespace: kube-system
spec:
  containers:
  - name: kube-scheduler
    command:
    - kube-scheduler
    - --leader-elect=true
    - --leader-elect-resource-name=sched
    livenessProbe:
      httpGet:
        host: 127.0.0.1
        path: /livez
        port: 10259
        scheme: HTTPS
`

// A restarted scheduler is waited for until the Lease its manifest names
// is renewed after its new container was made; renewals from before (the
// old process) do not count.
func TestRestartPodWaitsForTheLease(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kube-scheduler.yaml"), []byte(schedulerManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		renewed time.Time // the new container is made at time.Unix(1, 0)
		wantErr string
	}{
		{name: "renewed by the new process", renewed: time.Unix(2, 0)},
		{name: "renewed last by the old process", renewed: time.Unix(0, 5), wantErr: `kube-scheduler does not lead: not within 50ms: the Lease kube-system/sched is held by "node1_old"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var leases []string
			c := leasetest.Client(func(name string) (runtime.Object, error) {
				leases = append(leases, name)
				return leasetest.Lease(name, "node1_old", tc.renewed), nil
			})
			var out bytes.Buffer
			r := &Restarter{
				Runtime:  &fakeRuntime{running: map[string]string{"kube-scheduler": "kube-scheduler-a"}},
				Timeout:  time.Second,
				Interval: time.Millisecond,
				Healthy:  func(context.Context, string) error { return nil },
				Leaders:  &leaderlease.Waiter{Client: c, Timeout: 50 * time.Millisecond, Interval: 5 * time.Millisecond, Out: &out, Prefix: "[test]"},
			}
			err := r.RestartPod(context.Background(), dir, "kube-scheduler")
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("RestartPod = %v, want %q", err, tc.wantErr)
			}
			if len(leases) == 0 || leases[0] != "sched" {
				t.Errorf("Leases read: %q, want the one the manifest names", leases)
			}
		})
	}
}

// Components that elect no leader, and a Restarter without Leaders, read
// no Lease.
func TestRestartPodWithoutLeaders(t *testing.T) {
	dir := t.TempDir()
	etcd := strings.NewReplacer("kube-scheduler", "etcd", "10259", "2381", "HTTPS", "HTTP").Replace(schedulerManifest)
	for name, data := range map[string]string{"etcd": etcd, "kube-scheduler": schedulerManifest} {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reads := 0
	c := leasetest.Client(func(string) (runtime.Object, error) { reads++; return nil, nil })
	r := &Restarter{
		Runtime:  &fakeRuntime{running: map[string]string{"etcd": "etcd-a", "kube-scheduler": "kube-scheduler-a"}},
		Timeout:  time.Second,
		Interval: time.Millisecond,
		Healthy:  func(context.Context, string) error { return nil },
		Leaders:  &leaderlease.Waiter{Client: c, Timeout: time.Second, Out: &bytes.Buffer{}},
	}
	if err := r.RestartPod(context.Background(), dir, "etcd"); err != nil {
		t.Fatal(err)
	}
	r.Leaders = nil
	if err := r.WaitReplacedPod(context.Background(), dir, "kube-scheduler", ""); err != nil {
		t.Fatal(err)
	}
	if reads != 0 {
		t.Errorf("%d reads of Leases, want none", reads)
	}
}
