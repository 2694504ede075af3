package clusterdns

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

func dnsLabels() map[string]string { return map[string]string{LabelKey: LabelValue} }

func service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: Namespace, ResourceVersion: "0"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.10", Selector: dnsLabels()},
	}
}

// deployment is a Deployment called name; when rolledOut, its status says
// every replica runs its current template, of revision "1".
func deployment(name string, rolled bool) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: dnsLabels(), UID: types.UID("uid-" + name),
			Generation: 1, Annotations: map[string]string{revisionAnnotation: "1"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: dnsLabels()}},
	}
	if rolled {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	}
	return d
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: dnsLabels()}}
}

// addon is a DNS addon whose Apply writes its Deployment (rolled out or
// not) and the Service, and records each call.
func addon(name string, rolled bool, calls *[]string) Addon {
	return Addon{
		Name: name, Deployment: name, Service: service(),
		Apply: func(ctx context.Context, cs kubernetes.Interface, withService bool) error {
			*calls = append(*calls, name+map[bool]string{true: "+service", false: ""}[withService])
			if err := apiclient.CreateOrUpdate(ctx, cs.AppsV1().Deployments(Namespace), deployment(name, rolled)); err != nil {
				return err
			}
			if withService {
				return apiclient.ReplaceService(ctx, cs, service())
			}
			return nil
		},
	}
}

func fastOptions(slept *[]time.Duration) Options {
	return Options{Timeout: 200 * time.Millisecond, Interval: 5 * time.Millisecond, Settle: 3 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { *slept = append(*slept, d); return nil }}
}

func TestInstallNew(t *testing.T) {
	var calls []string
	var slept []time.Duration
	cs := fake.NewClientset()
	if err := Install(context.Background(), cs, addon("kube-dns", false, &calls), []Addon{addon("coredns", true, &calls)}, fastOptions(&slept)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "kube-dns+service" || len(slept) != 0 {
		t.Errorf("calls %v, slept %v; want one plain install", calls, slept)
	}
}

// TestInstallSwitch: the new Deployment is awaited, the Service narrowed
// to its Pods' template hash, the old Deployment deleted after Settle and
// its Pods awaited, then the Service put back; the Service is updated,
// never re-created.
func TestInstallSwitch(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-abc", Namespace: Namespace,
		Labels:          map[string]string{LabelKey: LabelValue, templateHashLabel: "abc"},
		Annotations:     map[string]string{revisionAnnotation: "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "kube-dns", UID: "uid-kube-dns", Controller: ptr.To(true)}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-x", Namespace: Namespace,
		Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "kube-dns-abc-1"}}}}
	cs := fake.NewClientset(deployment("coredns", true), service(), rs, slice, pod("coredns-old-1"), pod("kube-dns-abc-1"))
	// Deleting a Deployment takes its Pods (the garbage collector's work).
	cs.PrependReactor("delete", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		_ = cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), Namespace, name+"-old-1")
		return false, nil, nil
	})
	var selectors []string
	cs.PrependReactor("update", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.UpdateAction).GetObject().(*corev1.Service)
		selectors = append(selectors, labelsString(svc.Spec.Selector))
		return false, nil, nil
	})
	var calls []string
	var slept []time.Duration
	if err := Install(ctx, cs, addon("kube-dns", true, &calls), []Addon{addon("coredns", true, &calls)}, fastOptions(&slept)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "kube-dns,kube-dns+service" {
		t.Errorf("applies %v", calls)
	}
	if want := "k8s-app=kube-dns,pod-template-hash=abc|k8s-app=kube-dns"; strings.Join(selectors, "|") != want {
		t.Errorf("Service selectors %q, want %q", strings.Join(selectors, "|"), want)
	}
	if len(slept) != 1 || slept[0] != 3*time.Second {
		t.Errorf("slept %v, want the settle time once", slept)
	}
	if _, err := cs.AppsV1().Deployments(Namespace).Get(ctx, "coredns", metav1.GetOptions{}); err == nil {
		t.Error("the old Deployment is still there")
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "services" && a.GetVerb() == "create" {
			t.Errorf("the Service was re-created: %v", a)
		}
	}
}

// TestInstallNotReady: when the new Pods never get ready, Install fails
// saying the old addon keeps serving; the Service and the old Deployment
// are left alone.
func TestInstallNotReady(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(deployment("coredns", true), service())
	var calls []string
	var slept []time.Duration
	err := Install(ctx, cs, addon("kube-dns", false, &calls), []Addon{addon("coredns", true, &calls)}, fastOptions(&slept))
	if err == nil || !strings.Contains(err.Error(), "kube-dns did not become ready (coredns keeps serving)") {
		t.Fatalf("Install = %v", err)
	}
	if _, err := cs.AppsV1().Deployments(Namespace).Get(ctx, "coredns", metav1.GetOptions{}); err != nil {
		t.Errorf("the old Deployment was touched: %v", err)
	}
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "services" && a.GetVerb() != "get" {
			t.Errorf("the Service was written: %v", a)
		}
	}
}

// TestInstallDryRun: nothing is awaited; the writes and the deletion are
// sent (to the dry-run client, which only prints them).
func TestInstallDryRun(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(deployment("coredns", true), service())
	var calls []string
	var slept []time.Duration
	o := fastOptions(&slept)
	o.DryRun = true
	if err := Install(ctx, cs, addon("kube-dns", false, &calls), []Addon{addon("coredns", true, &calls)}, o); err != nil {
		t.Fatal(err)
	}
	if strings.Join(calls, ",") != "kube-dns+service" || len(slept) != 0 {
		t.Errorf("calls %v, slept %v", calls, slept)
	}
	if _, err := cs.AppsV1().Deployments(Namespace).Get(ctx, "coredns", metav1.GetOptions{}); err == nil {
		t.Error("the old Deployment's deletion was not sent")
	}
}

func labelsString(m map[string]string) string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: m})
}
