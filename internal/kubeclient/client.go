package kubeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// Interface is what kubeadm uses of the API server, group by group.
type Interface interface {
	CoreV1() CoreV1
	RbacV1() RbacV1
	AppsV1() AppsV1
	BatchV1() BatchV1
	CertificatesV1() CertificatesV1
	Discovery() Discovery
}

// CoreV1 holds the kinds of the core group kubeadm uses.
type CoreV1 interface {
	ConfigMaps(namespace string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList]
	Nodes() Resource[*corev1.Node, *corev1.NodeList]
	Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList]
	ServiceAccounts(namespace string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	Services(namespace string) Resource[*corev1.Service, *corev1.ServiceList]
}

// RbacV1 holds the kinds of rbac.authorization.k8s.io/v1.
type RbacV1 interface {
	Roles(namespace string) Resource[*rbacv1.Role, *rbacv1.RoleList]
	RoleBindings(namespace string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
	ClusterRoles() Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	ClusterRoleBindings() Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
}

// AppsV1 holds the kinds of apps/v1 kubeadm uses.
type AppsV1 interface {
	Deployments(namespace string) Resource[*appsv1.Deployment, *appsv1.DeploymentList]
	DaemonSets(namespace string) Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList]
}

// BatchV1 holds the kinds of batch/v1 kubeadm uses.
type BatchV1 interface {
	Jobs(namespace string) Resource[*batchv1.Job, *batchv1.JobList]
}

// CertificatesV1 holds the kinds of certificates.k8s.io/v1 kubeadm uses.
type CertificatesV1 interface {
	CertificateSigningRequests() CertificateSigningRequests
}

// CertificateSigningRequests are the cluster's certificate signing
// requests, with their approval subresource (the CISHardening feature
// gate's approver of kubelet serving certificates).
type CertificateSigningRequests interface {
	Resource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]
	// UpdateApproval stores the conditions of csr (an approval or a
	// denial) through its approval subresource.
	UpdateApproval(ctx context.Context, name string, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error)
}

// Discovery tells about the server itself.
type Discovery interface {
	// ServerVersion returns what the server's /version says.
	ServerVersion() (*version.Info, error)
	// RESTClient returns a client for paths outside the API groups
	// (/healthz, /readyz, /version).
	RESTClient() rest.Interface
}

// Resource is what kubeadm does with one kind of object, in one namespace
// for a namespaced kind ("" meaning all of them, for List and Watch): T is
// the object, L its list.
type Resource[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// NewForConfig returns a client of the server cfg describes. Each
// response body is capped at boundedread.MaxAPIResponse, and redirects are
// followed only on the same host, never from https to http
// (redirectpolicy.SameHost).
func NewForConfig(cfg *rest.Config) (Interface, error) {
	capped := rest.CopyConfig(cfg)
	capped.Wrap(boundedread.Transport(boundedread.MaxAPIResponse))
	hc, err := rest.HTTPClientFor(capped)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = redirectpolicy.SameHost
	return NewForConfigAndClient(capped, hc)
}

// NewForConfigAndClient returns a client of the server cfg describes that
// sends its requests with hc. As with client-go's clientset, all groups
// share one client-side rate limit (cfg's QPS and Burst) unless cfg has
// its own RateLimiter.
func NewForConfigAndClient(cfg *rest.Config, hc *http.Client) (Interface, error) {
	shared := *cfg
	if shared.UserAgent == "" {
		shared.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if shared.RateLimiter == nil && shared.QPS > 0 {
		if shared.Burst <= 0 {
			return nil, fmt.Errorf("a client-side rate limit of %v requests a second needs a burst above 0", shared.QPS)
		}
		shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(shared.QPS, shared.Burst)
	}

	scheme := NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	g := groups{params: runtime.NewParameterCodec(scheme), creds: credentialsOf(cfg)}

	var err error
	forGroup := func(gv schema.GroupVersion, apiPath string) rest.Interface {
		if err != nil {
			return nil
		}
		c := shared
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		var rc *rest.RESTClient
		rc, err = rest.RESTClientForConfigAndClient(&c, hc)
		return rc
	}
	g.core = forGroup(corev1.SchemeGroupVersion, "/api")
	g.rbac = forGroup(rbacv1.SchemeGroupVersion, "/apis")
	g.apps = forGroup(appsv1.SchemeGroupVersion, "/apis")
	g.batch = forGroup(batchv1.SchemeGroupVersion, "/apis")
	g.certificates = forGroup(certificatesv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	root := shared
	root.GroupVersion = nil
	root.APIPath = ""
	root.NegotiatedSerializer = codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientForConfigAndClient(&root, hc)
	if err != nil {
		return nil, err
	}
	g.root = rc
	return g, nil
}

// NewScheme returns a scheme of the API groups the client knows, for
// whoever needs to encode, decode or name their kinds (a dry run's
// transport).
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, rbacv1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, certificatesv1.AddToScheme,
	} {
		// Registering generated types fails only for a conflict between
		// them, which would be a bug here.
		if err := add(scheme); err != nil {
			panic(fmt.Sprintf("kubeclient: registering API types: %v", err))
		}
	}
	return scheme
}

// groups is the client: one REST client per API group, and one for the
// server's own paths.
type groups struct {
	core, rbac, apps, batch, root rest.Interface
	certificates                  rest.Interface
	params                        runtime.ParameterCodec
	creds                         credentials
}

func (g groups) CoreV1() CoreV1   { return coreV1(g) }
func (g groups) RbacV1() RbacV1   { return rbacV1(g) }
func (g groups) AppsV1() AppsV1   { return appsV1(g) }
func (g groups) BatchV1() BatchV1 { return batchV1(g) }
func (g groups) CertificatesV1() CertificatesV1 {
	return certificatesV1(g)
}
func (g groups) Discovery() Discovery { return discovery(g) }

type (
	coreV1         groups
	rbacV1         groups
	appsV1         groups
	batchV1        groups
	discovery      groups
	certificatesV1 groups
)

func (g coreV1) ConfigMaps(ns string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return newResource[corev1.ConfigMap, corev1.ConfigMapList](groups(g), g.core, ns, "configmaps")
}

func (g coreV1) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return newResource[corev1.Secret, corev1.SecretList](groups(g), g.core, ns, "secrets")
}

func (g coreV1) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return newResource[corev1.Node, corev1.NodeList](groups(g), g.core, "", "nodes")
}

func (g coreV1) Pods(ns string) Resource[*corev1.Pod, *corev1.PodList] {
	return newResource[corev1.Pod, corev1.PodList](groups(g), g.core, ns, "pods")
}

func (g coreV1) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return newResource[corev1.ServiceAccount, corev1.ServiceAccountList](groups(g), g.core, ns, "serviceaccounts")
}

func (g coreV1) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return newResource[corev1.Service, corev1.ServiceList](groups(g), g.core, ns, "services")
}

func (g rbacV1) Roles(ns string) Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return newResource[rbacv1.Role, rbacv1.RoleList](groups(g), g.rbac, ns, "roles")
}

func (g rbacV1) RoleBindings(ns string) Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return newResource[rbacv1.RoleBinding, rbacv1.RoleBindingList](groups(g), g.rbac, ns, "rolebindings")
}

func (g rbacV1) ClusterRoles() Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return newResource[rbacv1.ClusterRole, rbacv1.ClusterRoleList](groups(g), g.rbac, "", "clusterroles")
}

func (g rbacV1) ClusterRoleBindings() Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return newResource[rbacv1.ClusterRoleBinding, rbacv1.ClusterRoleBindingList](groups(g), g.rbac, "", "clusterrolebindings")
}

func (g appsV1) Deployments(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return newResource[appsv1.Deployment, appsv1.DeploymentList](groups(g), g.apps, ns, "deployments")
}

func (g appsV1) DaemonSets(ns string) Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return newResource[appsv1.DaemonSet, appsv1.DaemonSetList](groups(g), g.apps, ns, "daemonsets")
}

func (g batchV1) Jobs(ns string) Resource[*batchv1.Job, *batchv1.JobList] {
	return newResource[batchv1.Job, batchv1.JobList](groups(g), g.batch, ns, "jobs")
}

func (g certificatesV1) CertificateSigningRequests() CertificateSigningRequests {
	r := newResource[certificatesv1.CertificateSigningRequest, certificatesv1.CertificateSigningRequestList](groups(g), g.certificates, "", "certificatesigningrequests")
	return csrs{Resource: r, g: groups(g)}
}

// csrs is the certificate signing requests' resource with the approval
// subresource.
type csrs struct {
	Resource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]
	g groups
}

func (c csrs) UpdateApproval(ctx context.Context, name string, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	out := &certificatesv1.CertificateSigningRequest{}
	err := c.g.certificates.Put().Resource("certificatesigningrequests").Name(name).SubResource("approval").
		VersionedParams(&opts, c.g.params).Body(csr).Do(ctx).Into(out)
	return out, c.g.creds.explain(err, "update", describeObject("certificatesigningrequests", "", name)+" approval")
}

func (g discovery) RESTClient() rest.Interface { return g.root }

func (g discovery) ServerVersion() (*version.Info, error) {
	body, err := g.root.Get().AbsPath("/version").Do(context.TODO()).Raw()
	if err != nil {
		return nil, g.creds.explain(err, "get", "/version")
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("reading the server's version %q: %w", body, err)
	}
	return &info, nil
}
