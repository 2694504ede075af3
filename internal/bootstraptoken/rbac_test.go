package bootstraptoken

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// testdata/rbac.golden.yaml holds the objects upstream kubeadm v1.36.3
// sends in this phase (from its dry run), in its order.

func runAll(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	for _, s := range RBACSteps() {
		if err := s.Run(ctx, c); err != nil {
			t.Fatalf("%s: %v", s.Message, err)
		}
	}
	cm, err := ClusterInfo("testdata/admin.conf")
	if err != nil {
		t.Fatal(err)
	}
	if err := CreateClusterInfo(ctx, c, cm); err != nil {
		t.Fatal(err)
	}
}

func TestRBACObjectsMatchUpstream(t *testing.T) {
	c := fake.NewClientset()
	runAll(t, c)
	var sent []runtime.Object
	for _, a := range c.Actions() {
		if create, ok := a.(clienttesting.CreateAction); ok {
			if _, isCM := create.GetObject().(*corev1.ConfigMap); !isCM {
				sent = append(sent, create.GetObject())
			}
		}
	}
	want := readGoldenObjects(t, "testdata/rbac.golden.yaml")
	if len(sent) != len(want) {
		t.Fatalf("%d RBAC objects sent, upstream sends %d", len(sent), len(want))
	}
	// cluster-info's objects are made together (apiclient.Together), so
	// the fake clientset records them in any order; the dry-run test
	// checks the order.
	byKey := map[string]runtime.Object{}
	for _, o := range sent {
		byKey[objectKey(t, o)] = o
	}
	for i, w := range want {
		if got := byKey[objectKey(t, w)]; !reflect.DeepEqual(got, w) {
			t.Errorf("object %d (%s):\n got %#v\nwant %#v", i, objectKey(t, w), got, w)
		}
	}
}

// objectKey names o by its Go type, namespace and name.
func objectKey(t *testing.T, o runtime.Object) string {
	t.Helper()
	m, ok := o.(interface {
		GetNamespace() string
		GetName() string
	})
	if !ok {
		t.Fatalf("%T has no name", o)
	}
	return fmt.Sprintf("%T %s/%s", o, m.GetNamespace(), m.GetName())
}

func TestStepMessagesAreUpstreams(t *testing.T) {
	want := []string{
		"Configured RBAC rules to allow Node Bootstrap tokens to get nodes",
		"Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials",
		"Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token",
		"Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster",
		"Configured RBAC rules to allow the API server kubelet client certificate to access the kubelet API",
	}
	var got []string
	for _, s := range RBACSteps() {
		got = append(got, s.Message)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages\n got %q\nwant %q", got, want)
	}
}

func TestRunningTwiceConverges(t *testing.T) {
	c := fake.NewClientset()
	runAll(t, c)
	first := snapshot(t, c)
	// Someone edits a binding and cluster-info gets signed; a second run
	// puts the binding back and replaces cluster-info.
	ctx := context.Background()
	b, _ := c.RbacV1().ClusterRoleBindings().Get(ctx, KubeletBootstrapName, metav1.GetOptions{})
	b.Subjects = nil
	if _, err := c.RbacV1().ClusterRoleBindings().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runAll(t, c)
	if second := snapshot(t, c); !reflect.DeepEqual(first, second) {
		t.Errorf("state after the second run differs:\n%v\n%v", first, second)
	}
}

func TestStepErrorsNameTheObject(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("create", "clusterrolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(rbacv1.Resource("clusterrolebindings"), "", errors.New("no"))
	})
	err := RBACSteps()[1].Run(context.Background(), c)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ClusterRoleBinding kubeadm:kubelet-bootstrap") {
		t.Errorf("error %v", err)
	}
	if err := CreateClusterInfo(context.Background(), c, &corev1.ConfigMap{}); err == nil {
		t.Error("CreateClusterInfo accepted a ConfigMap other than cluster-info")
	}
}

// snapshot lists every object the phase manages, as YAML.
func snapshot(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	var objs []any
	crs, _ := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	crbs, _ := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	roles, _ := c.RbacV1().Roles("kube-public").List(ctx, metav1.ListOptions{})
	rbs, _ := c.RbacV1().RoleBindings("kube-public").List(ctx, metav1.ListOptions{})
	cms, _ := c.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{})
	objs = append(objs, crs, crbs, roles, rbs, cms)
	var b bytes.Buffer
	for _, o := range objs {
		items, err := meta.ExtractList(o.(runtime.Object))
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			m, _ := meta.Accessor(item)
			m.SetManagedFields(nil) // the fake stamps them with the time
			item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			printTestYAML(&b, item)
		}
	}
	return b.String()
}

func readGoldenObjects(t *testing.T, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode := scheme.Codecs.UniversalDeserializer().Decode
	var objs []runtime.Object
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj, _, err := decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // sent objects carry no type
		objs = append(objs, obj)
	}
	return objs
}

// printTestYAML writes obj the way the dry-run client shows objects, so the
// golden files keep their shape.
func printTestYAML(out io.Writer, obj any) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		fmt.Fprintf(out, "[dryrun] (the object could not be shown: %v)\n\n", err)
		return
	}
	fmt.Fprintf(out, "[dryrun] Attached object:\n%s\n", b)
}
