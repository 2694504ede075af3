// Package leasetest gives tests a client whose Leases are what a function
// says, to drive leaderlease's waits.
package leasetest

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Lease is the kube-system Lease name held by holder, last renewed at
// renewed.
func Lease(name, holder string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

// Client answers each Get of a Lease with get(name).
func Client(get func(name string) (runtime.Object, error)) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := get(a.(k8stesting.GetAction).GetName())
		return true, o, err
	})
	return c
}
