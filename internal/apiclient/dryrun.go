package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redact"
)

// dryRunReadTimeout bounds each read a dry run passes to the real cluster.
const dryRunReadTimeout = 30 * time.Second

// DryRunClient returns a client that changes nothing in any cluster. Each
// call is described on out the way upstream kubeadm's dry run does
// ("[dryrun] Would perform action CREATE on resource ..." and the object
// sent). Reads are answered by real when it is not nil and has the object,
// otherwise by an in-memory store that holds what earlier calls would have
// written, so a sequence of calls behaves as it would for real. Deletes
// always succeed. The data of the Secrets shown is replaced by
// "<redacted>", but for the public entries of bootstrap tokens (their ID,
// expiration, usages...).
//
// Reads are passed on for secrets, configmaps, nodes, clusterroles,
// clusterrolebindings, roles and rolebindings; other resources come from
// the in-memory store only.
//
// seed are objects the store starts with, as if written before: a dry run
// without a cluster uses them to stand in for what the cluster would have
// (the Node a kubelet registers).
//
// The client is client-go's clientset over an HTTP transport that answers
// in the process: no request leaves it.
func DryRunClient(out io.Writer, real kubernetes.Interface, seed ...runtime.Object) kubernetes.Interface {
	t := &dryRunTransport{
		out:     out,
		real:    real,
		scheme:  clientscheme.Scheme,
		decoder: clientscheme.Codecs.UniversalDeserializer(),
		store:   map[storeKey]runtime.Object{},
	}
	for _, obj := range seed {
		t.seed(obj)
	}
	cfg := &rest.Config{
		Host:          "https://dry-run.invalid",
		QPS:           -1, // no client-side rate limit: nothing is sent anywhere
		ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeJSON},
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, &http.Client{Transport: t})
	if err != nil {
		// Only a malformed rest.Config fails here, and this one is fixed.
		panic(fmt.Sprintf("dry-run client: %v", err))
	}
	return dryRunClientset{cs}
}

// dryRunTransport answers the client's requests from the real cluster
// (reads only) and its own store.
type dryRunTransport struct {
	out     io.Writer
	real    kubernetes.Interface
	scheme  *runtime.Scheme // the kinds the client knows (client-go's, read only)
	decoder runtime.Decoder // of the scheme's kinds, from JSON, YAML or protobuf

	mu    sync.Mutex // one request at a time, so output is not interleaved
	store map[storeKey]runtime.Object
}

type storeKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// dryRunRequest is an API request taken apart.
type dryRunRequest struct {
	verb      string // get, list, create, update, patch, delete
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	query     url.Values
	body      []byte
	patchType types.PatchType
}

// errUnsupported answers what a dry run cannot fake (watches, proxies).
var errUnsupported = errors.New("not supported by a dry run")

func (t *dryRunTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := boundedread.ReadAll(req.Body, boundedread.MaxAPIResponse, "the body of "+req.Method+" "+req.URL.String())
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	r, err := parseDryRunRequest(req.Method, req.URL, body)
	if err != nil {
		return nil, fmt.Errorf("dry run: %s %s: %w", req.Method, req.URL.Path, err)
	}
	r.patchType = types.PatchType(req.Header.Get("Content-Type"))

	t.mu.Lock()
	defer t.mu.Unlock()
	group := r.gvr.Group
	if group == "" {
		group = "core"
	}
	fmt.Fprintf(t.out, "[dryrun] Would perform action %s on resource %q in API group \"%s/%s\"\n", strings.ToUpper(r.verb), r.gvr.Resource, group, r.gvr.Version)
	code, obj, err := t.serve(r)
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return nil, err
		}
		s := status.Status()
		s.Kind, s.APIVersion = "Status", "v1"
		return jsonResponse(req, int(s.Code), s)
	}
	return jsonResponse(req, code, obj)
}

// serve carries out r: the status code and object to answer with, or an
// error (an API status error is answered as such).
func (t *dryRunTransport) serve(r dryRunRequest) (int, any, error) {
	key := storeKey{gvr: r.gvr, namespace: r.namespace, name: r.name}
	switch r.verb {
	case "get":
		fmt.Fprintf(t.out, "[dryrun] Resource name %q, namespace %q\n", r.name, r.namespace)
		if t.real != nil {
			obj, err := realGet(t.real, r.gvr.Resource, r.namespace, r.name)
			switch {
			case err == nil && obj != nil:
				return http.StatusOK, t.shown(obj), nil
			case err != nil && !apierrors.IsNotFound(err):
				return 0, nil, err
			}
		}
		fmt.Fprintln(t.out, "[dryrun] Real object does not exist. Attempting to GET from followup reactors or from the fake client tracker")
		obj, ok := t.store[key]
		if !ok {
			return 0, nil, apierrors.NewNotFound(r.gvr.GroupResource(), r.name)
		}
		return http.StatusOK, t.withKind(obj.DeepCopyObject()), nil
	case "list":
		selector, err := labels.Parse(r.query.Get("labelSelector"))
		if err != nil {
			return 0, nil, apierrors.NewBadRequest(err.Error())
		}
		if t.real != nil {
			obj, err := realList(t.real, r.gvr.Resource, r.namespace, metav1.ListOptions{
				LabelSelector: r.query.Get("labelSelector"),
				FieldSelector: r.query.Get("fieldSelector"),
			})
			if err != nil {
				return 0, nil, err
			}
			if obj != nil {
				return http.StatusOK, t.shown(obj), nil
			}
		}
		fmt.Fprintln(t.out, "[dryrun] Real object does not exist. Attempting to LIST from followup reactors or from the fake client tracker")
		return http.StatusOK, t.list(r, selector), nil
	case "create", "update":
		obj, err := t.decodeObject(r.gvr, r.body)
		if err != nil {
			return 0, nil, apierrors.NewBadRequest(err.Error())
		}
		code := http.StatusOK
		if r.verb == "create" {
			m, err := meta.Accessor(obj)
			if err != nil {
				return 0, nil, apierrors.NewBadRequest(err.Error())
			}
			key.name, code = m.GetName(), http.StatusCreated
		}
		shown := t.shown(obj)
		t.store[key] = obj
		return code, shown, nil
	case "patch":
		// The object as this dry run left it, else the real one.
		old, ok := t.store[key]
		if !ok && t.real != nil {
			obj, err := realGet(t.real, r.gvr.Resource, r.namespace, r.name)
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, nil, err
			}
			old, ok = obj, obj != nil && err == nil
		}
		if !ok {
			return 0, nil, apierrors.NewNotFound(r.gvr.GroupResource(), r.name)
		}
		obj, err := applyPatch(old, r.patchType, r.body)
		if err != nil {
			return 0, nil, apierrors.NewBadRequest(err.Error())
		}
		// As upstream's dry run, the object the patch leaves (upstream's
		// shows the object before it).
		fmt.Fprintf(t.out, "[dryrun] Resource name %q, namespace %q\n", r.name, r.namespace)
		t.store[key] = obj
		return http.StatusOK, t.shown(obj), nil
	case "delete":
		fmt.Fprintf(t.out, "[dryrun] Resource name %q, namespace %q\n", r.name, r.namespace)
		stub := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.namespace}}
		if gvk, err := t.kindFor(r.gvr); err == nil {
			stub.SetGroupVersionKind(gvk)
		}
		printYAML(t.out, stub)
		delete(t.store, key)
		return http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}, nil
	}
	return 0, nil, errUnsupported
}

// seed puts obj into the store, under the resource of its kind.
func (t *dryRunTransport) seed(obj runtime.Object) {
	gvks, _, err := t.scheme.ObjectKinds(obj)
	m, merr := meta.Accessor(obj)
	if err != nil || merr != nil || len(gvks) == 0 {
		return
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
	t.store[storeKey{gvr: gvr, namespace: m.GetNamespace(), name: m.GetName()}] = obj.DeepCopyObject()
}

// shown prints obj and returns it with its apiVersion and kind set, to be
// answered.
func (t *dryRunTransport) shown(obj runtime.Object) runtime.Object {
	t.printObject(obj)
	return t.withKind(obj.DeepCopyObject())
}

// list answers a list request from the store: the objects of r's resource
// in r's namespace (all namespaces when it is empty) whose labels match,
// by name.
func (t *dryRunTransport) list(r dryRunRequest, selector labels.Selector) map[string]any {
	var keys []storeKey
	for k, obj := range t.store {
		if k.gvr != r.gvr || (r.namespace != "" && k.namespace != r.namespace) {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && selector.Matches(labels.Set(m.GetLabels())) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	items := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		items = append(items, t.withKind(t.store[k].DeepCopyObject()))
	}
	kind := "List"
	if gvk, err := t.kindFor(r.gvr); err == nil {
		kind = gvk.Kind + "List"
	}
	return map[string]any{
		"apiVersion": r.gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{},
		"items":      items,
	}
}

// parseDryRunRequest takes apart a request of the client:
//
//	/api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]]
//	/apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]]
//
// A subresource is treated as its object.
func parseDryRunRequest(method string, u *url.URL, body []byte) (dryRunRequest, error) {
	r := dryRunRequest{query: u.Query(), body: body}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.gvr.Group, r.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return r, errUnsupported
	}
	// "namespaces/NS/..." is a namespaced resource, unless it stops at NS:
	// then it is the Namespace NS itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, parts = parts[1], parts[2:]
	}
	r.gvr.Resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	switch {
	case method == http.MethodGet && r.query.Get("watch") != "":
		return r, errUnsupported
	case method == http.MethodGet && r.name == "":
		r.verb = "list"
	case method == http.MethodGet:
		r.verb = "get"
	case method == http.MethodPost && r.name == "":
		r.verb = "create"
	case method == http.MethodPut && r.name != "":
		r.verb = "update"
	case method == http.MethodPatch && r.name != "":
		r.verb = "patch"
	case method == http.MethodDelete && r.name != "":
		r.verb = "delete"
	default:
		return r, errUnsupported
	}
	return r, nil
}

// decodeObject decodes a request body into the typed object of gvr's kind.
func (t *dryRunTransport) decodeObject(gvr schema.GroupVersionResource, body []byte) (runtime.Object, error) {
	var into *schema.GroupVersionKind
	if gvk, err := t.kindFor(gvr); err == nil {
		into = &gvk
	}
	obj, _, err := t.decoder.Decode(body, into, nil)
	return obj, err
}

// applyPatch returns a copy of obj with a patch of type pt applied.
func applyPatch(obj runtime.Object, pt types.PatchType, patch []byte) (runtime.Object, error) {
	original, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.StrategicMergePatchType:
		patched, err = strategicpatch.StrategicMergePatch(original, patch, obj)
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(original, patch)
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err == nil {
			patched, err = p.Apply(original)
		}
	default:
		return nil, fmt.Errorf("patch type %q %v", pt, errUnsupported)
	}
	if err != nil {
		return nil, err
	}
	// Into a new object: decoding into a copy of obj would keep the map
	// entries and fields the patch removed.
	out, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("patching a %T: %w", obj, errUnsupported)
	}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, err
	}
	return out, nil
}

// jsonResponse answers req with status code and v as JSON.
func jsonResponse(req *http.Request, code int, v any) (*http.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode:    code,
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{runtime.ContentTypeJSON}},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}, nil
}

// kindFor finds the kind of a resource of the client's scheme.
func (t *dryRunTransport) kindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	for gvk := range t.scheme.AllKnownTypes() {
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
func realList(c kubernetes.Interface, resource, ns string, opts metav1.ListOptions) (runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dryRunReadTimeout)
	defer cancel()
	switch resource {
	case "secrets":
		return c.CoreV1().Secrets(ns).List(ctx, opts)
	case "configmaps":
		return c.CoreV1().ConfigMaps(ns).List(ctx, opts)
	}
	return nil, nil
}

// printObject shows obj as YAML with its apiVersion and kind, the data
// of Secrets hidden.
func (t *dryRunTransport) printObject(obj runtime.Object) {
	printYAML(t.out, t.withKind(redactSecrets(obj.DeepCopyObject())))
}

// withKind fills in obj's apiVersion and kind, and those of its items, from
// the client's scheme, and returns it.
func (t *dryRunTransport) withKind(obj runtime.Object) runtime.Object {
	t.setKind(obj)
	if items, err := meta.ExtractList(obj); err == nil {
		for _, item := range items {
			t.setKind(item)
		}
	}
	return obj
}

// setKind fills in obj's apiVersion and kind from the client's scheme.
func (t *dryRunTransport) setKind(obj runtime.Object) {
	if gvks, _, err := t.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
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

// redactSecrets hides the data of Secrets, alone or in a list (see
// redact.Secret): the kubeadm-certs Secret and the secret of bootstrap
// tokens, among others. obj must be a copy.
func redactSecrets(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *corev1.Secret:
		redact.Secret(o)
	case *corev1.SecretList:
		for i := range o.Items {
			redact.Secret(&o.Items[i])
		}
	}
	return obj
}
