package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/csrapprover"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKubeletServingApprover runs the CISHardening profile's approver, the
// hidden "kubeadm kubelet-serving-approver" command with its own client
// certificate and ClusterRole, against a real API server and controller
// manager. Kubelets are played by impersonating nodes (the API server
// then records the node as the requester, as for a kubelet's own
// request). It approves the request a node makes for its own names, which
// the controller manager then signs, and leaves pending every request that
// asks for more: another node's address or name (also one its own Node
// claims), a client usage, a requester that is no node, a node with no
// Node object (until the Node appears: the next resync approves it). Its credential may approve
// nothing but kubelet serving certificates. A rewritten kubeconfig file is
// taken up while it runs.
func TestKubeletServingApprover(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	ctx := testContext(t, 3*time.Minute)
	admin := cp.Client()

	for _, apply := range []func() error{
		func() error {
			return apiclient.CreateOrUpdate(ctx, admin.RbacV1().ClusterRoles(), csrapprover.ClusterRole())
		},
		func() error {
			return apiclient.CreateOrUpdate(ctx, admin.RbacV1().ClusterRoleBindings(), csrapprover.ClusterRoleBinding())
		},
	} {
		if err := apply(); err != nil {
			t.Fatalf("the approver's RBAC: %v", err)
		}
	}
	ca, err := kubeconfig.LoadCAWithKey(cp.HostPath("/etc/kubernetes/pki"))
	if err != nil {
		t.Fatal(err)
	}
	approverConfPath := cis.ApproverKubeconfig("/etc/kubernetes")
	// writeApproverConf writes the approver's kubeconfig file with a new
	// client certificate for user.
	writeApproverConf := func(user string) {
		t.Helper()
		conf, err := kubeconfig.Issuer{CA: ca, Validity: time.Hour}.Config(kubeconfig.Spec{
			FileName: cis.ApproverKubeconfigFile, ClusterName: "kubernetes", Server: cp.Endpoint(), ClientName: user,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := kubeconfig.WriteFile(cp.HostPath(approverConfPath), conf); err != nil {
			t.Fatal(err)
		}
	}
	writeApproverConf(csrapprover.User)

	// Nodes with their addresses, as their kubelets report them; node-d's
	// kubelet also claims node-b's address.
	createNode(ctx, t, admin, "node-a", "10.0.0.5")
	createNode(ctx, t, admin, "node-b", "10.0.0.6")
	createNode(ctx, t, admin, "node-d", "10.0.0.8", "10.0.0.6")

	// The approver, as its static Pod runs it.
	var logs syncBuffer
	approver := cp.KubeadmCommand("kubelet-serving-approver", "--kubeconfig", approverConfPath, "--resync", "3s")
	approver.Stdout, approver.Stderr = &logs, &logs
	if err := approver.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- approver.Wait() }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = approver.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the approver's log:\n%s", logs.String())
		}
	}()

	asNode := func(name string) kubernetes.Interface {
		cfg, err := cp.RESTConfig(cp.SuperAdminKubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Impersonate.UserName = csrapprover.NodeUserPrefix + name
		cfg.Impersonate.Groups = []string{csrapprover.NodesGroup, "system:authenticated"}
		c, err := apiclient.FromRESTConfig(cfg, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	type request struct {
		name, requester string // requester "" is the super-admin
		cn              string
		dns             []string
		ip              []string
		usages          []certificatesv1.KeyUsage
	}
	post := func(r request) {
		t.Helper()
		c := admin
		if r.requester != "" {
			c = asNode(r.requester)
		}
		if _, err := c.CertificatesV1().CertificateSigningRequests().Create(ctx, servingRequest(t, r.name, r.cn, r.dns, r.ip, r.usages), metav1.CreateOptions{}); err != nil {
			t.Fatalf("posting %s: %v", r.name, err)
		}
	}
	good := request{"approver-good", "node-a", "system:node:node-a", []string{"node-a"}, []string{"10.0.0.5"}, serving}
	refused := map[string]request{
		"approver-other-ip":   {"approver-other-ip", "node-a", "system:node:node-a", []string{"node-a"}, []string{"10.0.0.5", "10.0.0.6"}, serving},
		"approver-other-name": {"approver-other-name", "node-a", "system:node:node-a", []string{"node-a", "node-b"}, nil, serving},
		"approver-client":     {"approver-client", "node-a", "system:node:node-a", []string{"node-a"}, nil, append(slices.Clone(serving), certificatesv1.UsageClientAuth)},
		"approver-not-node":   {"approver-not-node", "", "system:node:node-a", []string{"node-a"}, nil, serving},
		"approver-claimed-ip": {"approver-claimed-ip", "node-d", "system:node:node-d", []string{"node-d"}, []string{"10.0.0.8", "10.0.0.6"}, serving},
		"approver-unlisted":   {"approver-unlisted", "node-a", "system:node:node-a", []string{"node-a"}, []string{"10.0.0.9"}, serving},
	}
	// A node's request for another node's common name never reaches the
	// approver: the API server refuses to create it (NodeRestriction).
	late := request{"approver-late-node", "node-c", "system:node:node-c", []string{"node-c"}, []string{"10.0.0.7"}, serving}
	post(good)
	for _, r := range refused {
		post(r)
	}
	post(late)

	csrs := admin.CertificatesV1().CertificateSigningRequests()
	eventually(ctx, t, "the node's own request approved and signed", func() error {
		got, err := csrs.Get(ctx, good.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Certificate) == 0 {
			return fmt.Errorf("not issued yet (conditions %v)", got.Status.Conditions)
		}
		if len(got.Status.Conditions) == 0 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved || got.Status.Conditions[0].Reason != csrapprover.ApprovalReason {
			return fmt.Errorf("conditions %v, want the approver's approval first", got.Status.Conditions)
		}
		cert, err := pki.ParseCertPEM(got.Status.Certificate)
		if err != nil {
			return err
		}
		if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
			return fmt.Errorf("the issued certificate: %w", err)
		}
		if !slices.Equal(cert.DNSNames, []string{"node-a"}) || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
			return fmt.Errorf("issued for %v %v", cert.DNSNames, cert.IPAddresses)
		}
		return nil
	})

	// approved checks that the request called name was approved.
	approved := func(name string) func() error {
		return func() error {
			got, err := csrs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(got.Status.Conditions) == 0 || got.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
				return fmt.Errorf("conditions %v", got.Status.Conditions)
			}
			return nil
		}
	}

	// Each refusal is logged with its reason; then the request is still
	// undecided.
	for name := range refused {
		eventually(ctx, t, name+" refused in the approver's log", func() error {
			if !strings.Contains(logs.String(), "certificate signing request "+name+" of ") {
				return fmt.Errorf("no refusal of %s logged yet", name)
			}
			return nil
		})
	}
	if !strings.Contains(logs.String(), `the IP address 10.0.0.6 is also an address of Node "node-b"`) {
		t.Errorf("node-d's request for the address node-b lists too was not refused for that reason")
	}
	for name := range refused {
		got, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
			t.Errorf("%s: conditions %v, certificate %d bytes; want it pending", name, got.Status.Conditions, len(got.Status.Certificate))
		}
	}

	// A request made before its Node existed is approved at a resync once
	// the Node is there.
	if got, err := csrs.Get(ctx, late.name, metav1.GetOptions{}); err != nil || len(got.Status.Conditions) != 0 {
		t.Fatalf("%s before its Node: %v, %v", late.name, got.Status.Conditions, err)
	}
	createNode(ctx, t, admin, "node-c", "10.0.0.7")
	eventually(ctx, t, "the late node's request approved", approved(late.name))

	// The approver's credential approves kubelet serving requests only.
	client := servingRequest(t, "approver-apiserver-client", "someone", nil, nil, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
	client.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
	created, err := csrs.Create(ctx, client, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asApprover, err := cp.ClientFor(cp.HostPath(approverConfPath))
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test",
	})
	if _, err := asApprover.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the approver's credential approving a %s request: %v, want Forbidden", client.Spec.SignerName, err)
	}

	// A rewritten kubeconfig file (the renewal's, a CA rotation's) is
	// taken up without a restart. The new credential's user is the only
	// one the binding then names, so a request approved after the switch
	// proves that the approver uses the new file.
	const renewedUser = csrapprover.User + "-renewed"
	binding := csrapprover.ClusterRoleBinding()
	binding.Subjects[0].Name = renewedUser
	if err := apiclient.CreateOrUpdate(ctx, admin.RbacV1().ClusterRoleBindings(), binding); err != nil {
		t.Fatal(err)
	}
	writeApproverConf(renewedUser)
	eventually(ctx, t, "the rewritten kubeconfig taken up", func() error {
		if !strings.Contains(logs.String(), "changed: using its new credential and CAs") {
			return fmt.Errorf("no reload logged yet")
		}
		return nil
	})
	renewed := request{"approver-after-reload", "node-a", "system:node:node-a", []string{"node-a"}, []string{"10.0.0.5"}, serving}
	post(renewed)
	eventually(ctx, t, "a request approved with the rewritten kubeconfig", approved(renewed.name))

	// SIGTERM ends it cleanly, as the kubelet stops its container.
	if err := approver.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the approver after SIGTERM: %v", err)
		}
		exited <- err // for the deferred check
	case <-time.After(30 * time.Second):
		t.Error("the approver still runs 30s after SIGTERM")
	}
}

// createNode makes a Node with a host name and internal IP addresses, as
// a kubelet registers and reports them.
func createNode(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, ips ...string) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	// The controller manager may change the new Node (a taint) meanwhile:
	// read it again on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = nil
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: name})
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting the addresses of Node %s: %v", name, err)
	}
}

// servingRequest is a kubelet serving certificate request called name for
// the subject cn in the group system:nodes, with these names and usages.
func servingRequest(t *testing.T, name, cn string, dns, ips []string, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: cn, Organization: []string{csrapprover.NodesGroup}},
		DNSNames: dns,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: csrapprover.SignerName,
			Usages:     usages,
		},
	}
}
