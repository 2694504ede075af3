package csrapprover

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestListNodesFollowsPages: a large cluster's Nodes come in pages, each
// asked for with the previous page's continue token.
func TestListNodesFollowsPages(t *testing.T) {
	cs := fake.NewClientset()
	var asked []metav1.ListOptions
	cs.PrependReactor("list", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		opts := action.(k8stesting.ListActionImpl).ListOptions
		asked = append(asked, opts)
		page := len(asked)
		list := &corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d", page)}}}}
		if page < 3 {
			list.Continue = fmt.Sprintf("after-%d", page)
		}
		return true, list, nil
	})
	nodes, err := NewAPI(cs).ListNodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[2].Name != "node3" {
		t.Errorf("listed %v", nodes)
	}
	for i, opts := range asked {
		want := ""
		if i > 0 {
			want = fmt.Sprintf("after-%d", i)
		}
		if opts.Limit != nodesPage || opts.Continue != want {
			t.Errorf("request %d asked limit %d continue %q, want %d %q", i, opts.Limit, opts.Continue, nodesPage, want)
		}
	}
}
