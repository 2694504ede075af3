package apiclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/kubernetes/fake"
)

func TestCreateOrUpdate(t *testing.T) {
	c := fake.NewClientset()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}, Data: map[string]string{"a": "1"}}
	if err := CreateOrUpdate(ctx, c.CoreV1().ConfigMaps("ns"), cm); err != nil {
		t.Fatal(err)
	}
	cm2 := cm.DeepCopy()
	cm2.Data["a"] = "2"
	if err := CreateOrUpdate(ctx, c.CoreV1().ConfigMaps("ns"), cm2); err != nil {
		t.Fatal(err)
	}
	got, _ := c.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{})
	if got.Data["a"] != "2" {
		t.Fatalf("not updated: %v", got.Data)
	}
	cm3 := cm.DeepCopy()
	cm3.Data["a"] = "3"
	if err := CreateIfMissing(ctx, c.CoreV1().ConfigMaps("ns"), cm3); err != nil {
		t.Fatal(err)
	}
	got, _ = c.CoreV1().ConfigMaps("ns").Get(ctx, "x", metav1.GetOptions{})
	if got.Data["a"] != "2" {
		t.Fatalf("CreateIfMissing changed an existing object: %v", got.Data)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	err := Poll(context.Background(), time.Millisecond, time.Second, func(context.Context) (bool, error) {
		n++
		if n < 3 {
			return false, Retry(errors.New("not yet"))
		}
		return true, nil
	})
	if err != nil || n != 3 {
		t.Fatalf("n=%d err=%v", n, err)
	}
	err = Poll(context.Background(), time.Millisecond, 20*time.Millisecond, func(context.Context) (bool, error) {
		return false, Retry(errors.New("still broken"))
	})
	if err == nil || !errors.Is(err, err) || err.Error() == "" {
		t.Fatal("expected a timeout error")
	}
	boom := errors.New("boom")
	if err := Poll(context.Background(), time.Millisecond, time.Second, func(context.Context) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("a permanent error must end the poll: %v", err)
	}
}

// TestPollBackoff checks that the pause between tries doubles from first
// up to max (lower bounds only: a timer never fires early).
func TestPollBackoff(t *testing.T) {
	var at []time.Time
	err := PollBackoff(context.Background(), 2*time.Millisecond, 8*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		at = append(at, time.Now())
		return len(at) == 6, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{2, 4, 8, 8, 8} {
		if gap := at[i+1].Sub(at[i]); gap < want*time.Millisecond {
			t.Errorf("pause %d: %v, want at least %vms", i+1, gap, want)
		}
	}
}

// TestCreateOrUpdateRetries checks that conflicts and a busy server are
// retried a bounded number of times, and that other errors are not.
func TestCreateOrUpdateRetries(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name      string
		failures  int
		err       error
		wantCalls int
		wantErr   bool
	}{
		{"conflict then success", 2, apierrors.NewConflict(gr, "x", errors.New("changed")), 3, false},
		{"busy server then success", 1, apierrors.NewTooManyRequests("busy", 1), 2, false},
		{"always unavailable", 100, apierrors.NewServiceUnavailable("down"), writeAttempts, true},
		{"forbidden is final", 100, apierrors.NewForbidden(gr, "x", errors.New("no")), 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			calls := 0
			c.PrependReactor("create", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failures {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}}
			err := CreateOrUpdate(context.Background(), c.CoreV1().ConfigMaps("ns"), cm)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d create calls, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// An attempt that the deadline cuts short does not hide why the earlier
// attempts failed.
func TestPollKeepsTheReasonPastTheDeadline(t *testing.T) {
	attempts := 0
	err := Poll(context.Background(), time.Millisecond, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		attempts++
		if attempts == 1 {
			return false, Retry(errors.New("the node has no hostname label"))
		}
		<-ctx.Done() // a request still in flight when time runs out
		return false, Retry(fmt.Errorf("reading the node: %w", ctx.Err()))
	})
	if err == nil || !strings.Contains(err.Error(), "the node has no hostname label") {
		t.Errorf("error %v, want the first attempt's reason", err)
	}
}
