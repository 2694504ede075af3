package kubeclient

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is a pointer to an API object of type O.
type object[O any] interface {
	*O
	runtime.Object
	metav1.Object
}

// list is a pointer to a list of API objects of type L.
type list[L any] interface {
	*L
	runtime.Object
}

// resource is one kind in one namespace ("": all namespaces, or a kind
// without namespaces), as its plural name in the URL path says, over the
// REST client of its group.
type resource[O, L any, PO object[O], PL list[L]] struct {
	client    rest.Interface
	params    runtime.ParameterCodec
	namespace string
	plural    string
	// creds say who was refused when an answer has no message of its own.
	creds credentials
}

func newResource[O, L any, PO object[O], PL list[L]](g groups, c rest.Interface, namespace, plural string) Resource[PO, PL] {
	return resource[O, L, PO, PL]{client: c, params: g.params, namespace: namespace, plural: plural, creds: g.creds}
}

// explain gives err a message naming the request when the server's
// answer had none (see credentials.explain).
func (r resource[O, L, PO, PL]) explain(err error, verb, name string) error {
	return r.creds.explain(err, verb, describeObject(r.plural, r.namespace, name))
}

// at points req at the resource.
func (r resource[O, L, PO, PL]) at(req *rest.Request) *rest.Request {
	return req.NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.plural)
}

func (r resource[O, L, PO, PL]) Get(ctx context.Context, name string, opts metav1.GetOptions) (PO, error) {
	out := PO(new(O))
	err := r.at(r.client.Get()).Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, r.explain(err, "get", name)
}

func (r resource[O, L, PO, PL]) List(ctx context.Context, opts metav1.ListOptions) (PL, error) {
	out := PL(new(L))
	err := r.listing(opts).Do(ctx).Into(out)
	return out, r.explain(err, "list", "")
}

func (r resource[O, L, PO, PL]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	w, err := r.listing(opts).Watch(ctx)
	return w, r.explain(err, "watch", "")
}

// listing is the request of a list or a watch, which the server ends after
// opts.TimeoutSeconds when set.
func (r resource[O, L, PO, PL]) listing(opts metav1.ListOptions) *rest.Request {
	req := r.at(r.client.Get()).VersionedParams(&opts, r.params)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return req
}

func (r resource[O, L, PO, PL]) Create(ctx context.Context, obj PO, opts metav1.CreateOptions) (PO, error) {
	out := PO(new(O))
	err := r.at(r.client.Post()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, r.explain(err, "create", obj.GetName())
}

func (r resource[O, L, PO, PL]) Update(ctx context.Context, obj PO, opts metav1.UpdateOptions) (PO, error) {
	out := PO(new(O))
	err := r.at(r.client.Put()).Name(obj.GetName()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, r.explain(err, "update", obj.GetName())
}

func (r resource[O, L, PO, PL]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (PO, error) {
	out := PO(new(O))
	err := r.at(r.client.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, r.params).Body(data).Do(ctx).Into(out)
	return out, r.explain(err, "patch", name)
}

func (r resource[O, L, PO, PL]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	err := r.at(r.client.Delete()).Name(name).Body(&opts).Do(ctx).Error()
	return r.explain(err, "delete", name)
}
