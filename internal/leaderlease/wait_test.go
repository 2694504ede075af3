package leaderlease

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/leaderlease/leasetest"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		want   Lease
		wantOK bool
	}{
		{argv: []string{"kube-scheduler", "--leader-elect=true"}, want: Lease{"kube-scheduler", "kube-system", "kube-scheduler"}, wantOK: true},
		{argv: []string{"kube-scheduler"}, want: Lease{"kube-scheduler", "kube-system", "kube-scheduler"}, wantOK: true},
		{argv: []string{"kube-scheduler", "--leader-elect=false"}, want: Lease{"kube-scheduler", "kube-system", "kube-scheduler"}},
		{argv: []string{"kube-scheduler", "--leader-elect=false", "--leader-elect"}, want: Lease{"kube-scheduler", "kube-system", "kube-scheduler"}, wantOK: true},
		{argv: []string{"kube-controller-manager", "--leader-elect-resource-name=kcm", "--leader-elect-resource-namespace=infra"},
			want: Lease{"kube-controller-manager", "infra", "kcm"}, wantOK: true},
	} {
		got, ok := Of(tc.argv[0], tc.argv)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Of(%q) = %v, %v, want %v, %v", tc.argv, got, ok, tc.want, tc.wantOK)
		}
	}
}

func testWaiter(c *fake.Clientset, out *bytes.Buffer) Waiter {
	return Waiter{Client: c, Timeout: 200 * time.Millisecond, Interval: 5 * time.Millisecond, Out: out, Prefix: "[upgrade/test]"}
}

var kcmAndScheduler = []Lease{{"kube-controller-manager", "kube-system", "kube-controller-manager"}, {"kube-scheduler", "kube-system", "kube-scheduler"}}

// A Lease renewed after the wait began ends it; one still renewed before
// (a component waiting out the lease duration of the previous holder)
// keeps it going until a new holder renews it.
func TestWait(t *testing.T) {
	since := time.Now()
	gets := 0
	c := leasetest.Client(func(name string) (runtime.Object, error) {
		gets++
		if name == "kube-controller-manager" && gets < 4 {
			return leasetest.Lease(name, "node1_old", since.Add(-time.Minute)), nil
		}
		return leasetest.Lease(name, "node1_new", since.Add(time.Second)), nil
	})
	var out bytes.Buffer
	if err := testWaiter(c, &out).Wait(context.Background(), kcmAndScheduler, since); err != nil {
		t.Fatal(err)
	}
	if gets != 5 {
		t.Errorf("%d reads of the Leases, want 5", gets)
	}
	for _, want := range []string{"[upgrade/test] Waiting up to 200ms for kube-controller-manager to lead: its Lease kube-system/kube-controller-manager renewed after ",
		`[upgrade/test] kube-scheduler leads ("node1_new" holds kube-system/kube-scheduler) after `} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Each Lease that nobody renews in time is named with what was last
// read of it; the others are still waited for.
func TestWaitFails(t *testing.T) {
	since := time.Now()
	for name, tc := range map[string]struct {
		get  func(name string) (runtime.Object, error)
		want []string
	}{
		"held by the restored holder": {
			get: func(name string) (runtime.Object, error) {
				return leasetest.Lease(name, "node1_old", since.Add(-time.Minute)), nil
			},
			want: []string{`kube-controller-manager does not lead: not within 200ms: the Lease kube-system/kube-controller-manager is held by "node1_old", last renewed at ` + since.Add(-time.Minute).UTC().Format(time.RFC3339Nano),
				"kube-scheduler does not lead: "},
		},
		"released": {
			get: func(name string) (runtime.Object, error) {
				return leasetest.Lease(name, "", since.Add(time.Second)), nil
			},
			want: []string{`the Lease kube-system/kube-scheduler is held by "", last renewed at `},
		},
		"missing": {
			get: func(name string) (runtime.Object, error) {
				return nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), name)
			},
			want: []string{"kube-controller-manager does not lead: not within 200ms: the Lease kube-system/kube-controller-manager does not exist"},
		},
		"API error": {
			get:  func(name string) (runtime.Object, error) { return nil, errors.New("connection refused") },
			want: []string{"the Lease kube-system/kube-scheduler: connection refused"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := testWaiter(leasetest.Client(tc.get), &bytes.Buffer{}).Wait(context.Background(), kcmAndScheduler, since)
			checkErr(t, err, tc.want)
		})
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// A cancelled upgrade stops the wait with its own cause.
func TestWaitCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := testWaiter(fake.NewClientset(), &bytes.Buffer{})
	w.Timeout = time.Hour
	if err := w.Wait(ctx, kcmAndScheduler[:1], time.Now()); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
}

// Without a Client, each Wait makes one with NewClient (a kubeconfig
// renewed meanwhile is read again); a failure to make one is the wait's.
func TestWaitNewClient(t *testing.T) {
	since := time.Now()
	made := 0
	w := testWaiter(nil, &bytes.Buffer{})
	w.Client = nil
	w.NewClient = func() (kubernetes.Interface, error) {
		made++
		return leasetest.Client(func(name string) (runtime.Object, error) {
			return leasetest.Lease(name, "node1_new", since.Add(time.Second)), nil
		}), nil
	}
	for range 2 {
		if err := w.Wait(context.Background(), kcmAndScheduler, since); err != nil {
			t.Fatal(err)
		}
	}
	if made != 2 {
		t.Errorf("%d clients made for 2 waits, want 2", made)
	}
	if err := w.Wait(context.Background(), nil, since); err != nil || made != 2 {
		t.Errorf("a wait for no Lease: %v, %d clients made, want none", err, made-2)
	}
	w.NewClient = func() (kubernetes.Interface, error) { return nil, errors.New("admin.conf: no such file") }
	checkErr(t, w.Wait(context.Background(), kcmAndScheduler, since), []string{"reaching the cluster to read the Leases: admin.conf: no such file"})
}

// With Unreadable set, a wait that cannot read the Lease (no client, or
// no answer for that long) ends with a warning; a Lease that is read and
// not renewed still fails it.
func TestWaitUnreadable(t *testing.T) {
	since := time.Now()
	for name, tc := range map[string]struct {
		newClient func() (kubernetes.Interface, error)
		wantErr   string
		wantOut   string
	}{
		"no admin.conf": {
			newClient: func() (kubernetes.Interface, error) { return nil, errors.New("open admin.conf: no such file") },
			wantOut:   "[upgrade/test] WARNING: not waiting for kube-controller-manager to lead, as its Lease cannot be read: reaching the cluster to read the Leases: open admin.conf: no such file\n",
		},
		"no answer": {
			newClient: func() (kubernetes.Interface, error) {
				return leasetest.Client(func(string) (runtime.Object, error) { return nil, errors.New("connection refused") }), nil
			},
			wantOut: "[upgrade/test] WARNING: not waiting for kube-scheduler to lead, as its Lease cannot be read: reading the Lease kube-system/kube-scheduler: connection refused\n",
		},
		"read, not renewed": {
			newClient: func() (kubernetes.Interface, error) {
				return leasetest.Client(func(name string) (runtime.Object, error) {
					return leasetest.Lease(name, "node1_old", since.Add(-time.Minute)), nil
				}), nil
			},
			wantErr: `kube-controller-manager does not lead: not within 200ms: the Lease kube-system/kube-controller-manager is held by "node1_old"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			w := testWaiter(nil, &out)
			w.Client, w.NewClient, w.Unreadable = nil, tc.newClient, 20*time.Millisecond
			err := w.Wait(context.Background(), kcmAndScheduler, since)
			if tc.wantErr != "" {
				checkErr(t, err, []string{tc.wantErr})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out.String())
			}
		})
	}
}
