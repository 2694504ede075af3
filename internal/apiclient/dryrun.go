package apiclient

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/yaml"
)

// dryRunReadTimeout bounds each read a dry run passes to the real cluster.
const dryRunReadTimeout = 30 * time.Second

// DryRunClient returns a client that changes nothing in any cluster. Each
// call is described on out the way upstream kubeadm's dry run does
// ("[dryrun] Would perform action CREATE on resource ..." and the object
// sent). Reads are answered by real when it is not nil and has the object,
// otherwise by an in-memory store that holds what earlier calls would have
// written, so a sequence of calls behaves as it would for real. Deletes
// always succeed. Token secrets in the Secrets shown are replaced by
// "<redacted>".
//
// Reads are passed on for secrets, configmaps, nodes, clusterroles,
// clusterrolebindings, roles and rolebindings; other resources come from
// the in-memory store only.
func DryRunClient(out io.Writer, real kubernetes.Interface) kubernetes.Interface {
	cs := fake.NewClientset()
	tracker := cs.Tracker()
	cs.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return dryRun(out, real, tracker, a)
	})
	return cs
}

func dryRun(out io.Writer, real kubernetes.Interface, tracker clienttesting.ObjectTracker, a clienttesting.Action) (bool, runtime.Object, error) {
	gvr := a.GetResource()
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	verb := a.GetVerb()
	fmt.Fprintf(out, "[dryrun] Would perform action %s on resource %q in API group \"%s/%s\"\n", strings.ToUpper(verb), gvr.Resource, group, gvr.Version)
	ns := a.GetNamespace()
	switch verb {
	case "get":
		name := a.(clienttesting.GetAction).GetName()
		fmt.Fprintf(out, "[dryrun] Resource name %q, namespace %q\n", name, ns)
		if real != nil {
			obj, err := realGet(real, gvr.Resource, ns, name)
			switch {
			case err == nil && obj != nil:
				printObject(out, obj)
				return true, obj, nil
			case err != nil && !apierrors.IsNotFound(err):
				return true, nil, err
			}
		}
		fmt.Fprintln(out, "[dryrun] Real object does not exist. Attempting to GET from followup reactors or from the fake client tracker")
		return false, nil, nil
	case "list":
		if real != nil {
			obj, err := realList(real, gvr.Resource, ns, a.(clienttesting.ListAction).GetListRestrictions())
			if err != nil {
				return true, nil, err
			}
			if obj != nil {
				printObject(out, obj)
				return true, obj, nil
			}
		}
		fmt.Fprintln(out, "[dryrun] Real object does not exist. Attempting to LIST from followup reactors or from the fake client tracker")
		return false, nil, nil
	case "create":
		obj := a.(clienttesting.CreateAction).GetObject()
		printObject(out, obj)
		if err := tracker.Create(gvr, obj, ns); apierrors.IsAlreadyExists(err) {
			_ = tracker.Update(gvr, obj, ns)
		}
		return true, obj, nil
	case "update":
		obj := a.(clienttesting.UpdateAction).GetObject()
		printObject(out, obj)
		if err := tracker.Update(gvr, obj, ns); apierrors.IsNotFound(err) {
			_ = tracker.Create(gvr, obj, ns)
		}
		return true, obj, nil
	case "delete":
		name := a.(clienttesting.DeleteAction).GetName()
		fmt.Fprintf(out, "[dryrun] Resource name %q, namespace %q\n", name, ns)
		stub := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if gvk, err := kindFor(gvr); err == nil {
			stub.SetGroupVersionKind(gvk)
		}
		printYAML(out, stub)
		_ = tracker.Delete(gvr, ns, name)
		return true, nil, nil
	}
	return false, nil, nil
}

// kindFor finds the kind of a resource of the client's scheme.
func kindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Group != gvr.Group || gvk.Version != gvr.Version {
			continue
		}
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gvr.Resource {
			return gvk, nil
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("no kind for %s", gvr)
}

// realGet reads one object from the real cluster; (nil, nil) when the
// resource is not one a dry run passes on.
func realGet(c kubernetes.Interface, resource, ns, name string) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dryRunReadTimeout)
	defer cancel()
	opts := metav1.GetOptions{}
	switch resource {
	case "secrets":
		return c.CoreV1().Secrets(ns).Get(ctx, name, opts)
	case "configmaps":
		return c.CoreV1().ConfigMaps(ns).Get(ctx, name, opts)
	case "nodes":
		return c.CoreV1().Nodes().Get(ctx, name, opts)
	case "clusterroles":
		return c.RbacV1().ClusterRoles().Get(ctx, name, opts)
	case "clusterrolebindings":
		return c.RbacV1().ClusterRoleBindings().Get(ctx, name, opts)
	case "roles":
		return c.RbacV1().Roles(ns).Get(ctx, name, opts)
	case "rolebindings":
		return c.RbacV1().RoleBindings(ns).Get(ctx, name, opts)
	}
	return nil, nil
}

// realList lists secrets or configmaps in the real cluster; (nil, nil) for
// other resources.
func realList(c kubernetes.Interface, resource, ns string, r clienttesting.ListRestrictions) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dryRunReadTimeout)
	defer cancel()
	opts := metav1.ListOptions{LabelSelector: r.Labels.String(), FieldSelector: r.Fields.String()}
	switch resource {
	case "secrets":
		return c.CoreV1().Secrets(ns).List(ctx, opts)
	case "configmaps":
		return c.CoreV1().ConfigMaps(ns).List(ctx, opts)
	}
	return nil, nil
}

// printObject shows obj as YAML with its apiVersion and kind, token
// secrets hidden.
func printObject(out io.Writer, obj runtime.Object) {
	obj = redactTokenSecrets(obj.DeepCopyObject())
	setKind(obj)
	if items, err := meta.ExtractList(obj); err == nil {
		for _, item := range items {
			setKind(item)
		}
	}
	printYAML(out, obj)
}

// setKind fills in obj's apiVersion and kind from the client's scheme.
func setKind(obj runtime.Object) {
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
}

func printYAML(out io.Writer, obj any) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		fmt.Fprintf(out, "[dryrun] (the object could not be shown: %v)\n\n", err)
		return
	}
	fmt.Fprintf(out, "[dryrun] Attached object:\n%s\n", b)
}

// redactTokenSecrets hides the token-secret of bootstrap token Secrets,
// alone or in a list. obj must be a copy.
func redactTokenSecrets(obj runtime.Object) runtime.Object {
	redact := func(s *corev1.Secret) {
		if _, ok := s.Data[bootstrapapi.BootstrapTokenSecretKey]; ok {
			s.Data[bootstrapapi.BootstrapTokenSecretKey] = []byte("<redacted>")
		}
		if _, ok := s.StringData[bootstrapapi.BootstrapTokenSecretKey]; ok {
			s.StringData[bootstrapapi.BootstrapTokenSecretKey] = "<redacted>"
		}
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		redact(o)
	case *corev1.SecretList:
		for i := range o.Items {
			redact(&o.Items[i])
		}
	}
	return obj
}
