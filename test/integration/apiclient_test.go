package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// testAPIClient drives every method kubeadm uses of the clientset
// apiclient makes (cp.Client is made by apiclient.FromRESTConfig, with its
// response cap and redirect rule) against the real API server: the paths
// of each group, namespaced and cluster-wide kinds, options sent as query
// parameters, a subresource, a watch, and the server's errors read back as
// the API's status errors. Then the client's request timeout bounds a
// watch the server would hold open for many minutes.
func testAPIClient(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	c := cp.Client()

	info, err := c.Discovery().ServerVersion()
	if err != nil || !strings.HasPrefix(info.GitVersion, "v1.") {
		t.Fatalf("ServerVersion: %+v, %v", info, err)
	}

	const name = "apiclient-check"
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceDefault)
	if _, err := cms.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing ConfigMap: %v, want NotFound", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"apiclient-check": "yes"}},
		Data:       map[string]string{"a": "1"},
	}
	created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if err != nil || created.UID == "" || created.Data["a"] != "1" {
		t.Fatalf("Create: %+v, %v", created, err)
	}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second Create: %v, want AlreadyExists", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "apiclient-dry"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("Create with server-side dry run: %v", err)
	} else if _, err := cms.Get(ctx, "apiclient-dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry-run Create was stored (the option was not sent): %v", err)
	}

	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "apiclient-check=yes"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != name {
		t.Fatalf("List by label: %+v, %v", list, err)
	}
	everywhere, err := c.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "apiclient-check=yes"})
	if err != nil || len(everywhere.Items) != 1 {
		t.Errorf("List in all namespaces: %+v, %v", everywhere, err)
	}

	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "apiclient-check=yes", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()

	created.Data["a"] = "2"
	updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil || updated.Data["a"] != "2" || updated.ResourceVersion == created.ResourceVersion {
		t.Fatalf("Update: %+v, %v", updated, err)
	}
	if _, err := cms.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Update from a stale version: %v, want Conflict", err)
	}
	select {
	case ev := <-w.ResultChan():
		got, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Modified || !ok || got.Data["a"] != "2" {
			t.Errorf("watch event: %s %T %+v", ev.Type, ev.Object, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the update")
	}

	patched, err := cms.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"data":{"b":"3"}}`), metav1.PatchOptions{})
	if err != nil || patched.Data["a"] != "2" || patched.Data["b"] != "3" {
		t.Errorf("strategic merge Patch: %+v, %v", patched, err)
	}
	patched, err = cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"a":null}}`), metav1.PatchOptions{})
	if _, has := patched.Data["a"]; err != nil || has {
		t.Errorf("merge Patch: %+v, %v", patched, err)
	}

	if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second Delete: %v, want NotFound", err)
	}

	// A kind without namespaces, and a subresource.
	nodes := c.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "apiclient-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create Node: %v", err)
	}
	defer func() { _ = nodes.Delete(ctx, node.Name, metav1.DeleteOptions{}) }()
	status := []byte(`{"status":{"capacity":{"cpu":"3"}}}`)
	if _, err := nodes.Patch(ctx, node.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("Patch of the Node's status: %v", err)
	}
	got, err := nodes.Get(ctx, node.Name, metav1.GetOptions{})
	if cpu := got.Status.Capacity[corev1.ResourceCPU]; err != nil || cpu.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("the Node's capacity after the status patch: %v, %v", got.Status.Capacity, err)
	}

	// Every other group answers at its path.
	if _, err := c.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("rbac ClusterRoles Get: %v", err)
	}
	if _, err := c.RbacV1().RoleBindings(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("rbac RoleBindings List: %v", err)
	}
	if _, err := c.AppsV1().Deployments(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("apps Deployments List: %v", err)
	}
	if _, err := c.BatchV1().Jobs(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("batch Jobs List: %v", err)
	}

	// The request timeout bounds each request, a watch included.
	cfg, err := cp.RESTConfig(cp.SuperAdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	const requestTimeout = 2 * time.Second
	bounded, err := apiclient.FromRESTConfig(cfg, requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bounded.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("Get through a client with a %v request timeout: %v", requestTimeout, err)
	}
	began := time.Now()
	quiet, err := bounded.CoreV1().ConfigMaps(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{LabelSelector: "apiclient-check=never"})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer quiet.Stop()
	for ended := false; !ended; {
		select {
		case _, open := <-quiet.ResultChan():
			ended = !open
		case <-ctx.Done():
			t.Fatalf("a watch through a client with a %v request timeout was still open after %v", requestTimeout, time.Since(began))
		}
	}
	if took := time.Since(began); took < requestTimeout || took > 10*requestTimeout {
		t.Errorf("the watch ended after %v; the request timeout is %v", took, requestTimeout)
	}
}
