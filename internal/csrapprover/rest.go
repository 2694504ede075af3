package csrapprover

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// restAPI is API over client-go's REST clients of the core and
// certificates.k8s.io/v1 groups.
type restAPI struct {
	core, certs rest.Interface
	params      runtime.ParameterCodec
}

// NewAPI returns the API of the server cfg describes.
func NewAPI(cfg *rest.Config) (API, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, certificatesv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("registering API types: %w", err)
		}
	}
	codecs := serializer.NewCodecFactory(scheme)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client := func(gv *schema.GroupVersion, apiPath string) (rest.Interface, error) {
		c := *cfg
		c.GroupVersion = gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		return rest.RESTClientForConfigAndClient(&c, hc)
	}
	core, err := client(&corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	certs, err := client(&certificatesv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return restAPI{core: core, certs: certs, params: runtime.NewParameterCodec(scheme)}, nil
}

const csrs = "certificatesigningrequests"

func (r restAPI) ListCSRs(ctx context.Context) (*certificatesv1.CertificateSigningRequestList, error) {
	out := &certificatesv1.CertificateSigningRequestList{}
	err := r.certs.Get().Resource(csrs).Do(ctx).Into(out)
	return out, err
}

func (r restAPI) WatchCSRs(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	opts := metav1.ListOptions{Watch: true, ResourceVersion: resourceVersion, AllowWatchBookmarks: true}
	return r.certs.Get().Resource(csrs).VersionedParams(&opts, r.params).Watch(ctx)
}

func (r restAPI) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := r.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out)
	return out, err
}

func (r restAPI) Approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	return r.certs.Put().Resource(csrs).Name(csr.Name).SubResource("approval").Body(csr).Do(ctx).Error()
}
