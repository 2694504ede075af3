package noderole

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"k8s.io/client-go/kubernetes/fake"
)

var (
	cpTaint   = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	fooTaint  = corev1.Taint{Key: "example.com/foo", Value: "bar", Effect: corev1.TaintEffectNoExecute}
	keepTaint = corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
)

// fooAdded is fooTaint as the API server stores it (NoExecute taints get
// a timeAdded).
var fooAdded = corev1.Taint{Key: fooTaint.Key, Value: fooTaint.Value, Effect: fooTaint.Effect,
	TimeAdded: &metav1.Time{Time: time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)}}

var fast = Options{Interval: time.Millisecond, Timeout: 2 * time.Second}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, ResourceVersion: "1"},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
}

func registered(name string) map[string]string {
	return map[string]string{HostnameLabel: name}
}

func patches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestMarkControlPlane(t *testing.T) {
	tests := []struct {
		name        string
		node        *corev1.Node
		taints      []corev1.Taint
		wantLabels  map[string]string
		wantTaints  []corev1.Taint
		wantPatches int
	}{
		{
			name:   "fresh node",
			node:   node("n1", registered("n1")),
			taints: []corev1.Taint{cpTaint},
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			wantTaints:  []corev1.Taint{cpTaint},
			wantPatches: 1,
		},
		{
			name:   "taints go before the node's own",
			node:   node("n1", registered("n1"), keepTaint),
			taints: []corev1.Taint{fooTaint, cpTaint},
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			wantTaints:  []corev1.Taint{fooTaint, cpTaint, keepTaint},
			wantPatches: 1,
		},
		{
			name:   "wanted taints come first even when the node has them",
			node:   node("n1", registered("n1"), keepTaint, cpTaint),
			taints: []corev1.Taint{fooTaint, cpTaint},
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			wantTaints:  []corev1.Taint{fooTaint, cpTaint, keepTaint},
			wantPatches: 1,
		},
		{
			name:   "a taint with another value is replaced",
			node:   node("n1", registered("n1"), keepTaint, corev1.Taint{Key: fooTaint.Key, Value: "old", Effect: fooTaint.Effect}),
			taints: []corev1.Taint{fooTaint},
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			wantTaints:  []corev1.Taint{fooTaint, keepTaint},
			wantPatches: 1,
		},
		{
			name: "no taints asked",
			node: node("n1", map[string]string{HostnameLabel: "n1", "node-role.kubernetes.io/control-plane": "yes"}),
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			wantPatches: 1,
		},
		{
			name: "already marked: no patch",
			node: node("n1", map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
				fooAdded, keepTaint),
			taints: []corev1.Taint{fooTaint},
			wantLabels: map[string]string{HostnameLabel: "n1",
				"node-role.kubernetes.io/control-plane":                   "",
				"node.kubernetes.io/exclude-from-external-load-balancers": ""},
			// the node's copy, with its timeAdded, counts as the wanted one
			wantTaints:  []corev1.Taint{fooAdded, keepTaint},
			wantPatches: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset(tt.node)
			ctx := context.Background()
			if err := MarkControlPlane(ctx, c, tt.node.Name, tt.taints, fast); err != nil {
				t.Fatal(err)
			}
			got, err := c.CoreV1().Nodes().Get(ctx, tt.node.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Labels, tt.wantLabels) {
				t.Errorf("labels %v, want %v", got.Labels, tt.wantLabels)
			}
			if !reflect.DeepEqual(got.Spec.Taints, tt.wantTaints) {
				t.Errorf("taints %v, want %v", got.Spec.Taints, tt.wantTaints)
			}
			if n := patches(c); n != tt.wantPatches {
				t.Errorf("%d patches, want %d", n, tt.wantPatches)
			}
			// Running again changes nothing.
			before := patches(c)
			if err := MarkControlPlane(ctx, c, tt.node.Name, tt.taints, fast); err != nil {
				t.Fatal(err)
			}
			if n := patches(c) - before; n != 0 {
				t.Errorf("second run patched %d times, want 0", n)
			}
		})
	}
}

func TestPatchShape(t *testing.T) {
	p, changed, err := controlPlanePatch(node("n1", registered("n1"), keepTaint), []corev1.Taint{cpTaint})
	if err != nil || !changed {
		t.Fatalf("controlPlanePatch: %v, changed %v", err, changed)
	}
	want := `{"metadata":{"resourceVersion":"1","labels":{"node-role.kubernetes.io/control-plane":"","node.kubernetes.io/exclude-from-external-load-balancers":""}},"spec":{"taints":[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"},{"key":"node.kubernetes.io/not-ready","effect":"NoSchedule"}]}}`
	if string(p) != want {
		t.Errorf("patch\n%s\nwant\n%s", p, want)
	}
}

func TestMarkControlPlaneWaits(t *testing.T) {
	ctx := context.Background()
	t.Run("for the kubelet's label", func(t *testing.T) {
		c := fake.NewClientset(node("n1", nil))
		gets := 0
		c.PrependReactor("get", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
			gets++
			if gets == 3 { // the kubelet registers meanwhile
				n := node("n1", registered("n1"))
				if _, err := c.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "", "n1"); err == nil {
					_ = c.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, n, "")
				}
			}
			return false, nil, nil
		})
		if err := MarkControlPlane(ctx, c, "n1", []corev1.Taint{cpTaint}, fast); err != nil {
			t.Fatal(err)
		}
		if gets < 3 {
			t.Errorf("%d reads, want at least 3", gets)
		}
	})
	t.Run("and gives up with a clear error", func(t *testing.T) {
		c := fake.NewClientset(node("n1", nil))
		err := MarkControlPlane(ctx, c, "n1", nil, Options{Interval: time.Millisecond, Timeout: 50 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "has no kubernetes.io/hostname label") {
			t.Errorf("error %v", err)
		}
		if patches(c) != 0 {
			t.Error("an unregistered node was patched")
		}
	})
	t.Run("for a node that does not exist", func(t *testing.T) {
		c := fake.NewClientset()
		err := MarkControlPlane(ctx, c, "ghost", nil, Options{Interval: time.Millisecond, Timeout: 50 * time.Millisecond})
		if err == nil || !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "Node ghost") {
			t.Errorf("error %v, want NotFound naming the node", err)
		}
	})
}

func TestMarkControlPlaneRetriesConflicts(t *testing.T) {
	c := fake.NewClientset(node("n1", registered("n1")))
	failures := 2
	c.PrependReactor("patch", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	if err := MarkControlPlane(context.Background(), c, "n1", []corev1.Taint{cpTaint}, fast); err != nil {
		t.Fatal(err)
	}
	if n := patches(c); n != 3 {
		t.Errorf("%d patches, want 3 (two conflicts, then success)", n)
	}
}
