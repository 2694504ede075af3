package upgrade_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// TestReadClusterStateListsNodesInPages: the nodes are read page by page,
// each answer staying far below the cap on one response, and every page
// counts.
func TestReadClusterStateListsNodesInPages(t *testing.T) {
	c := fake.NewClientset()
	pages := map[string]struct {
		nodes []string
		next  string
	}{"": {[]string{"a", "b"}, "p2"}, "p2": {[]string{"c"}, "p3"}, "p3": {[]string{"d"}, ""}}
	var limits []int64
	c.PrependReactor("list", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		opts := action.(k8stesting.ListActionImpl).ListOptions
		limits = append(limits, opts.Limit)
		page, ok := pages[opts.Continue]
		if !ok {
			return true, nil, fmt.Errorf("unknown continue token %q", opts.Continue)
		}
		list := &corev1.NodeList{ListMeta: metav1.ListMeta{Continue: page.next}}
		for _, n := range page.nodes {
			list.Items = append(list.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n},
				Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.2"}}})
		}
		return true, list, nil
	})
	s, err := upgrade.ReadClusterState(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Kubelets) != 4 {
		t.Errorf("kubelets %v, want the four nodes of three pages", s.Kubelets)
	}
	for _, l := range limits {
		if l <= 0 || l > 500 {
			t.Errorf("listed with limit %d, want pages of a few hundred nodes", l)
		}
	}
}
