package csrapprover

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// requestPEM makes a PKCS#10 request, as a kubelet would, from tmpl.
func requestPEM(t *testing.T, tmpl x509.CertificateRequest) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// kubeletTemplate is what the kubelet of node1 asks for.
func kubeletTemplate() x509.CertificateRequest {
	return x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:node:node1", Organization: []string{"system:nodes"}},
		DNSNames:    []string{"node1"},
		IPAddresses: []net.IP{net.ParseIP("10.199.0.11")},
	}
}

func node1() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.199.0.11"},
			{Type: corev1.NodeHostName, Address: "node1"},
		}},
	}
}

// node2 is another node of the cluster.
func node2() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node2"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.199.0.12"},
			{Type: corev1.NodeHostName, Address: "node2"},
		}},
	}
}

// servingCSR is node1's kubelet serving request made of tmpl.
func servingCSR(t *testing.T, tmpl x509.CertificateRequest) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-abc", UID: "uid-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    requestPEM(t, tmpl),
			SignerName: SignerName,
			Username:   "system:node:node1",
			Groups:     []string{"system:nodes", "system:authenticated"},
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth},
		},
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(t *testing.T, csr *certificatesv1.CertificateSigningRequest)
		nodes  func() []corev1.Node // default: node1 and node2
		refuse string               // "" accepts
	}{
		{name: "the kubelet's request", refuse: ""},
		{name: "ECDSA without key encipherment", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature}
		}},
		{name: "host name in another case", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.DNSNames = []string{"NODE1"}
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "another signer", refuse: "the signer", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}},
		{name: "requester is not a node", refuse: "is not a node", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Username = "system:serviceaccount:kube-system:default"
		}},
		{name: "requester is another node", refuse: "common name", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Username = "system:node:node2"
		}},
		{name: "requester outside system:nodes", refuse: "not in the group", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Groups = []string{"system:authenticated"}
		}},
		{name: "no Node", refuse: "no Node", nodes: func() []corev1.Node { return []corev1.Node{*node2()} }},
		{name: "IP address another Node lists too", refuse: `IP address 10.199.0.11 is also an address of Node "node2"`, nodes: func() []corev1.Node {
			n2 := node2()
			n2.Status.Addresses = append(n2.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "10.199.0.11"})
			return []corev1.Node{*node1(), *n2}
		}},
		{name: "DNS name another Node lists too", refuse: `DNS name "node1" is also an address of Node "node2"`, nodes: func() []corev1.Node {
			n2 := node2()
			n2.Status.Addresses = append(n2.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalDNS, Address: "Node1"})
			return []corev1.Node{*n2, *node1()}
		}},
		{name: "subject of another node", refuse: "common name", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.Subject.CommonName = "system:node:node2"
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "subject in another group", refuse: "organizations", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.Subject.Organization = []string{"system:masters"}
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "subject with more", refuse: "more than", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.Subject.OrganizationalUnit = []string{"x"}
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "extra DNS name", refuse: `DNS name "kubernetes.default"`, edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.DNSNames = append(tmpl.DNSNames, "kubernetes.default")
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "extra IP address", refuse: "IP address 10.96.0.1", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP("10.96.0.1"))
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "URI", refuse: "URIs", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}}
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "no names", refuse: "no DNS name", edit: func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			tmpl := kubeletTemplate()
			tmpl.DNSNames, tmpl.IPAddresses = nil, nil
			csr.Spec.Request = requestPEM(t, tmpl)
		}},
		{name: "client auth usage", refuse: `"client auth"`, edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = append(csr.Spec.Usages, certificatesv1.UsageClientAuth)
		}},
		{name: "no server auth", refuse: "lack", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment}
		}},
		{name: "not PEM", refuse: "PEM", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			csr.Spec.Request = []byte("garbage")
		}},
		{name: "bad signature", refuse: "signature", edit: func(_ *testing.T, csr *certificatesv1.CertificateSigningRequest) {
			block, _ := pem.Decode(csr.Spec.Request)
			block.Bytes[len(block.Bytes)-3] ^= 0xff
			csr.Spec.Request = pem.EncodeToMemory(block)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			csr := servingCSR(t, kubeletTemplate())
			if c.edit != nil {
				c.edit(t, csr)
			}
			nodes := []corev1.Node{*node1(), *node2()}
			if c.nodes != nil {
				nodes = c.nodes()
			}
			err := Check(csr, nodes)
			switch {
			case c.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.refuse != "" && err == nil:
				t.Errorf("accepted, want a refusal naming %q", c.refuse)
			case c.refuse != "" && !strings.Contains(err.Error(), c.refuse):
				t.Errorf("refused with %q, want it to name %q", err, c.refuse)
			}
		})
	}
}

// fakeAPI is an API of one Node and a list of requests; approvals are
// recorded. conflict makes the next approval fail as another approver's
// would.
type fakeAPI struct {
	mu       sync.Mutex
	node     *corev1.Node
	listed   int // calls of ListNodes
	csrs     []certificatesv1.CertificateSigningRequest
	approved []string
	conflict bool
}

func (f *fakeAPI) ListCSRs(context.Context) (*certificatesv1.CertificateSigningRequestList, error) {
	return &certificatesv1.CertificateSigningRequestList{Items: f.csrs}, nil
}

func (f *fakeAPI) WatchCSRs(context.Context, string) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

func (f *fakeAPI) ListNodes(context.Context) ([]corev1.Node, error) {
	f.listed++
	if f.node == nil {
		return nil, nil
	}
	return []corev1.Node{*f.node}, nil
}

func (f *fakeAPI) Approve(_ context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conflict {
		f.conflict = false
		return apierrors.NewConflict(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, csr.Name, errors.New("changed"))
	}
	last := csr.Status.Conditions[len(csr.Status.Conditions)-1]
	if last.Type != certificatesv1.CertificateApproved || last.Status != corev1.ConditionTrue || last.Reason != ApprovalReason {
		return errors.New("not an approval")
	}
	f.approved = append(f.approved, csr.Name)
	return nil
}

func TestHandle(t *testing.T) {
	good := servingCSR(t, kubeletTemplate())
	decided := good.DeepCopy()
	decided.Name = "csr-denied"
	decided.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	client := good.DeepCopy()
	client.Name = "csr-client"
	client.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
	bad := servingCSR(t, kubeletTemplate())
	bad.Name, bad.UID = "csr-bad", "uid-2"
	bad.Spec.Usages = append(bad.Spec.Usages, certificatesv1.UsageClientAuth)

	api := &fakeAPI{node: node1()}
	var logs []string
	a := &Approver{API: api, Log: func(f string, args ...any) { logs = append(logs, f) }}
	ctx := context.Background()
	if a.Handle(ctx, decided) || a.Handle(ctx, client) {
		t.Error("approved a decided request or one of another signer")
	}
	for range 2 { // looked at twice (a resync), logged once
		if a.Handle(ctx, bad) {
			t.Error("approved a request that fails the checks")
		}
	}
	if len(logs) != 1 {
		t.Errorf("a refusal is logged once, got %d lines", len(logs))
	}
	api.conflict = true
	if a.Handle(ctx, good) {
		t.Error("an approval another approver made first counts as ours")
	}
	if !a.Handle(ctx, good) || len(api.approved) != 1 || api.approved[0] != "csr-abc" {
		t.Errorf("approved %v", api.approved)
	}
}

// TestHandleListsNodesOnceForABurst: the requests looked at together share
// one list of the Nodes; a later one lists them again and sees a Node that
// appeared meanwhile.
func TestHandleListsNodesOnceForABurst(t *testing.T) {
	now := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	api := &fakeAPI{node: node2()}
	a := &Approver{API: api, Now: func() time.Time { return now }}
	ctx := context.Background()
	for i := range 3 {
		csr := servingCSR(t, kubeletTemplate())
		csr.Name, csr.UID = fmt.Sprintf("csr-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		if a.Handle(ctx, csr) {
			t.Errorf("%s approved without its Node", csr.Name)
		}
	}
	if api.listed != 1 {
		t.Errorf("three requests at once listed the Nodes %d times, want 1", api.listed)
	}
	api.node = node1()
	now = now.Add(nodesMaxAge)
	if !a.Handle(ctx, servingCSR(t, kubeletTemplate())) || api.listed != 2 {
		t.Errorf("after %v: approved %v, Nodes listed %d times, want the new Node seen", nodesMaxAge, api.approved, api.listed)
	}
}

func TestRunApprovesWhatIsListed(t *testing.T) {
	api := &fakeAPI{node: node1(), csrs: []certificatesv1.CertificateSigningRequest{*servingCSR(t, kubeletTemplate())}}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Approver{API: api, Log: func(string, ...any) {}}
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	approved := func() int {
		api.mu.Lock()
		defer api.mu.Unlock()
		return len(api.approved)
	}
	for range 100 {
		if approved() > 0 {
			break
		}
		waitABit()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	if approved() == 0 {
		t.Error("nothing approved")
	}
}

func waitABit() { <-time.After(10 * time.Millisecond) }

// unauthorizedAPI refuses every request as an API server refuses an
// expired client certificate.
type unauthorizedAPI struct{}

var errExpired = apierrors.NewUnauthorized("the certificate has expired")

func (unauthorizedAPI) ListCSRs(context.Context) (*certificatesv1.CertificateSigningRequestList, error) {
	return nil, errExpired
}

func (unauthorizedAPI) WatchCSRs(context.Context, string) (watch.Interface, error) {
	return nil, errExpired
}

func (unauthorizedAPI) ListNodes(context.Context) ([]corev1.Node, error) { return nil, errExpired }

func (unauthorizedAPI) Approve(context.Context, *certificatesv1.CertificateSigningRequest) error {
	return errExpired
}

// TestRunEndsWhenUnauthorized: with a stale credential the approver ends,
// so that its container starts again with the renewed kubeconfig file.
func TestRunEndsWhenUnauthorized(t *testing.T) {
	a := &Approver{API: unauthorizedAPI{}}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	select {
	case err := <-done:
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run goes on with a refused credential")
	}
}
