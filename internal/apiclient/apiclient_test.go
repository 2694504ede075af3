package apiclient

import (
	"context"
	"errors"
	"testing"
	"time"

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
