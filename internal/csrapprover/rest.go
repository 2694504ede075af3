package csrapprover

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// clientAPI is API over client-go's typed clientset (made by
// internal/apiclient, which bounds each request).
type clientAPI struct{ c kubernetes.Interface }

// NewAPI returns the API of c's server.
func NewAPI(c kubernetes.Interface) API { return clientAPI{c: c} }

func (a clientAPI) ListCSRs(ctx context.Context) (*certificatesv1.CertificateSigningRequestList, error) {
	return a.c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
}

func (a clientAPI) WatchCSRs(ctx context.Context, resourceVersion string) (watch.Interface, error) {
	return a.c.CertificatesV1().CertificateSigningRequests().Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true})
}

// nodesPage is how many Nodes one list request asks for: a page stays far
// below the client's cap on an answer however large the cluster.
const nodesPage = 500

func (a clientAPI) ListNodes(ctx context.Context) ([]corev1.Node, error) {
	var nodes []corev1.Node
	opts := metav1.ListOptions{Limit: nodesPage}
	for {
		page, err := a.c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, page.Items...)
		if page.Continue == "" {
			return nodes, nil
		}
		opts.Continue = page.Continue
	}
}

func (a clientAPI) Approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	_, err := a.c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	return err
}
