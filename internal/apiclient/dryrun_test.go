package apiclient

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestDryRunClientStore(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "1"}}}
	c := DryRunClient(&out, nil, node)

	// A seeded object is read back and can be patched, by each patch type.
	for _, p := range []struct {
		pt    types.PatchType
		patch string
		label string
	}{
		{types.StrategicMergePatchType, `{"metadata":{"labels":{"b":"2"}}}`, "b"},
		{types.MergePatchType, `{"metadata":{"labels":{"c":"3"}}}`, "c"},
		{types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/d","value":"4"}]`, "d"},
	} {
		got, err := c.CoreV1().Nodes().Patch(ctx, "n1", p.pt, []byte(p.patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s patch: %v", p.pt, err)
		}
		if got.Labels["a"] != "1" || got.Labels[p.label] == "" {
			t.Errorf("%s patch: labels %v", p.pt, got.Labels)
		}
	}
	got, err := c.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil || len(got.Labels) != 4 {
		t.Errorf("Node after the patches: %v, %v", got, err)
	}
	// Each patch is shown with the object it leaves.
	if printed := out.String(); !strings.Contains(printed, "[dryrun] Would perform action PATCH on resource \"nodes\" in API group \"core/v1\"\n[dryrun] Resource name \"n1\", namespace \"\"\n[dryrun] Attached object:\n") ||
		!strings.Contains(printed, "    d: \"4\"\n") {
		t.Errorf("the patches are not shown:\n%s", printed)
	}
	if _, err := c.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patch of a missing Node: %v, want NotFound", err)
	}

	// What was "created" is listed, by namespace and labels.
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns1", Labels: map[string]string{"app": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "ns1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "z", Namespace: "ns2", Labels: map[string]string{"app": "x"}}},
	} {
		if _, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.CoreV1().ConfigMaps("ns1").List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "x" {
		t.Errorf("list in ns1 with app=x: %v, %v", list, err)
	}
	list, err = c.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 3 {
		t.Errorf("list in all namespaces: %v, %v", list, err)
	}
	if _, err := c.CoreV1().ConfigMaps("ns1").Watch(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a dry-run watch did not fail")
	}
	if !strings.Contains(out.String(), "[dryrun] Would perform action PATCH on resource \"nodes\" in API group \"core/v1\"\n") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestDryRunClientPatchReal: a patch of an object only the real cluster
// has applies to the real object, and leaves the real object as it was.
func TestDryRunClientPatchReal(t *testing.T) {
	ctx := context.Background()
	real := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"a": "1", "b": "2"}}})
	var out bytes.Buffer
	c := DryRunClient(&out, real)
	got, err := c.CoreV1().Nodes().Patch(ctx, "n1", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":null}}}`), metav1.PatchOptions{})
	if err != nil || len(got.Annotations) != 1 || got.Annotations["b"] != "2" {
		t.Fatalf("patch of the real Node: %v, %v", got, err)
	}
	if n, _ := real.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); len(n.Annotations) != 2 {
		t.Errorf("the dry run changed the real Node: %v", n.Annotations)
	}
	if _, err := c.CoreV1().Nodes().Patch(ctx, "n2", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("patch of a Node neither has: %v, want NotFound", err)
	}
}

// TestDryRunClientRealErrors: a read the real cluster refuses fails the
// same way through the dry run.
func TestDryRunClientRealErrors(t *testing.T) {
	real := fake.NewClientset()
	real.PrependReactor("get", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", nil)
	})
	var out bytes.Buffer
	_, err := DryRunClient(&out, real).CoreV1().Secrets("kube-system").Get(context.Background(), "s", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("error %v, want Forbidden", err)
	}
}
