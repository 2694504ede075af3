package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// The join token of the limits test, with kubeadm's default groups, and
// the certificate key its configuration fixes.
const (
	limitsTokenID, limitsTokenSecret = "limitk", "0123456789abcdef"
	limitsCertKey                    = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	limitsConfigPath                 = "/limits.yaml"
	// limitsNode is a Node the test creates, so that requests on it find
	// something.
	limitsNode = "limits-node"
)

func limitsConfig(cp *controlplane.ControlPlane) string {
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: ` + limitsTokenID + `.` + limitsTokenSecret + `
localAPIEndpoint:
  advertiseAddress: ` + cp.AdvertiseAddress().String() + `
nodeRegistration:
  name: ` + controlplane.DefaultNodeName + `
certificateKey: ` + limitsCertKey + `
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + controlplane.KubernetesVersion + `
`
}

// tokenRequest is one request made with the join token's credentials.
type tokenRequest struct {
	what         string
	method, path string
	body         string
	header       map[string]string
	// allowed: the API server must serve it (a 2xx answer); otherwise it
	// must refuse it with 403 Forbidden.
	allowed bool
}

// dryRun marks a mutating request as a dry run: authorization is decided
// before the dry run takes effect, so a refusal is a real refusal, and a
// request wrongly allowed changes nothing the later checks read.
func dryRun(path string) string {
	if strings.Contains(path, "?") {
		return path + "&dryRun=All"
	}
	return path + "?dryRun=All"
}

// tokenRequests is what a holder of a join token (a bootstrap token with
// kubeadm's default groups, system:bootstrappers and
// system:bootstrappers:kubeadm:default-node-token) may and may not do in a
// cluster that init's API phases set up. The allowed ones are what join
// needs; every refusal is the API server's own (403), checked against the
// RBAC upstream kubeadm v1.37.2 creates and against ours.
func tokenRequests() []tokenRequest {
	const (
		ks   = "/api/v1/namespaces/kube-system"
		csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
		rbac = "/apis/rbac.authorization.k8s.io/v1"
	)
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"evil"},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10.1"}]}}`
	node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"evil-node"}}`
	adminBinding := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"evil"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:bootstrappers"}]}`
	roleBinding := strings.Replace(strings.Replace(adminBinding, "ClusterRoleBinding", "RoleBinding", 1), `"name":"evil"}`, `"name":"evil","namespace":"kube-system"}`, 1)
	token := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-evilid","namespace":"kube-system"},` +
		`"type":"bootstrap.kubernetes.io/token","stringData":{"token-id":"evilid","token-secret":"0123456789abcdef","usage-bootstrap-authentication":"true"}}`
	touch := `{"metadata":{"labels":{"example.com/touched":"yes"}}}`
	return []tokenRequest{
		// What join does with the token.
		{what: "read the Node of its own name", method: "GET", path: "/api/v1/nodes/" + limitsNode, allowed: true},
		{what: "read kubeadm-config", method: "GET", path: ks + "/configmaps/kubeadm-config", allowed: true},
		{what: "read kubelet-config", method: "GET", path: ks + "/configmaps/kubelet-config", allowed: true},
		{what: "read kube-proxy's ConfigMap", method: "GET", path: ks + "/configmaps/kube-proxy", allowed: true},
		{what: "read the encrypted kubeadm-certs", method: "GET", path: ks + "/secrets/kubeadm-certs", allowed: true},
		{what: "list CSRs", method: "GET", path: csrs, allowed: true},
		{what: "ask who it is", method: "POST", path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, allowed: true},
		{what: "read the version", method: "GET", path: "/version", allowed: true},
		{what: "read cluster-info", method: "GET", path: "/api/v1/namespaces/kube-public/configmaps/cluster-info"},

		// Nodes: get only.
		{what: "list Nodes", method: "GET", path: "/api/v1/nodes"},
		{what: "watch Nodes", method: "GET", path: "/api/v1/nodes?watch=true&timeoutSeconds=1"},
		{what: "create a Node", method: "POST", path: dryRun("/api/v1/nodes"), body: node},
		{what: "patch a Node", method: "PATCH", path: dryRun("/api/v1/nodes/" + limitsNode), body: touch},
		{what: "patch a Node's status", method: "PATCH", path: dryRun("/api/v1/nodes/" + limitsNode + "/status"), body: touch},
		{what: "delete a Node", method: "DELETE", path: dryRun("/api/v1/nodes/" + limitsNode)},

		// Secrets: kubeadm-certs only, read only.
		{what: "read its own token Secret", method: "GET", path: ks + "/secrets/bootstrap-token-" + limitsTokenID},
		{what: "list Secrets in kube-system", method: "GET", path: ks + "/secrets"},
		{what: "list Secrets of every namespace", method: "GET", path: "/api/v1/secrets"},
		{what: "read a Secret in default", method: "GET", path: "/api/v1/namespaces/default/secrets/anything"},
		{what: "create a bootstrap token", method: "POST", path: dryRun(ks + "/secrets"), body: token},
		{what: "change kubeadm-certs", method: "PATCH", path: dryRun(ks + "/secrets/kubeadm-certs"), body: touch},
		{what: "delete kubeadm-certs", method: "DELETE", path: dryRun(ks + "/secrets/kubeadm-certs")},
		{what: "ask for a service account token", method: "POST", path: dryRun(ks + "/serviceaccounts/kube-proxy/token"),
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["https://kubernetes.default.svc"]}}`},

		// ConfigMaps: the three join reads, nothing else.
		{what: "change kubeadm-config", method: "PATCH", path: dryRun(ks + "/configmaps/kubeadm-config"), body: touch},
		{what: "delete kubeadm-config", method: "DELETE", path: dryRun(ks + "/configmaps/kubeadm-config")},
		{what: "change kubelet-config", method: "PATCH", path: dryRun(ks + "/configmaps/kubelet-config"), body: touch},
		{what: "change kube-proxy's ConfigMap", method: "PATCH", path: dryRun(ks + "/configmaps/kube-proxy"), body: touch},
		{what: "list ConfigMaps in kube-system", method: "GET", path: ks + "/configmaps"},
		{what: "read CoreDNS's ConfigMap", method: "GET", path: ks + "/configmaps/coredns"},
		{what: "change cluster-info", method: "PATCH", path: dryRun("/api/v1/namespaces/kube-public/configmaps/cluster-info"), body: touch},

		// Workloads, namespaces, leases.
		{what: "create a Pod in kube-system", method: "POST", path: dryRun(ks + "/pods"), body: pod},
		{what: "create a Pod in default", method: "POST", path: dryRun("/api/v1/namespaces/default/pods"), body: pod},
		{what: "list Pods in kube-system", method: "GET", path: ks + "/pods"},
		{what: "list namespaces", method: "GET", path: "/api/v1/namespaces"},
		{what: "list Leases in kube-system", method: "GET", path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"},

		// RBAC and identity.
		{what: "bind itself to cluster-admin", method: "POST", path: dryRun(rbac + "/clusterrolebindings"), body: adminBinding},
		{what: "bind itself in kube-system", method: "POST", path: dryRun(rbac + "/namespaces/kube-system/rolebindings"), body: roleBinding},
		{what: "list ClusterRoleBindings", method: "GET", path: rbac + "/clusterrolebindings"},
		{what: "impersonate a user", method: "GET", path: "/api/v1/nodes/" + limitsNode, header: map[string]string{"Impersonate-User": "kubernetes-admin"}},
		{what: "impersonate system:masters", method: "GET", path: "/api/v1/nodes/" + limitsNode,
			header: map[string]string{"Impersonate-User": "x", "Impersonate-Group": "system:masters"}},
		{what: "review tokens", method: "POST", path: "/apis/authentication.k8s.io/v1/tokenreviews",
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`},

		// CSRs: post and read, never decide.
		{what: "delete a CSR", method: "DELETE", path: dryRun(csrs + "/anything")},
		{what: "approve a CSR", method: "PATCH", path: dryRun(csrs + "/anything/approval"),
			body: `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Evil","message":"evil"}]}}`},
		{what: "write a CSR's status", method: "PATCH", path: dryRun(csrs + "/anything/status"), body: `{"status":{"certificate":"eA=="}}`},
	}
}

// TestBootstrapTokenLimits sets up the API objects of a new cluster (the
// API phases of init: upload-config, upload-certs, bootstrap-token, addon)
// with upstream kubeadm on one control plane and with ours on another,
// and makes the requests of tokenRequests with the join token's
// credentials against each: upstream's answers prove the list, ours must
// give the same. Then it checks what the token's reads and certificate
// requests yield: kubeadm-certs is useless without the certificate key,
// and only a node client certificate is issued to it.
func TestBootstrapTokenLimits(t *testing.T) {
	ours, upstream := addonsKubeadms(t)
	for _, k := range []struct{ who, bin string }{{"upstream", upstream}, {"ours", ours}} {
		t.Run(k.who, func(t *testing.T) {
			c := newAddonsCluster(t, ours, k.bin)
			writeRootFile(t, c.cp, limitsConfigPath, limitsConfig(c.cp))
			for _, phase := range [][]string{
				{"upload-config", "all"},
				{"upload-certs", "--upload-certs"},
				{"bootstrap-token"},
				{"addon", "all"},
			} {
				c.run(t, false, append(append([]string{"init", "phase"}, phase...), "--config", limitsConfigPath)...)
			}
			ctx := testContext(t, 2*time.Minute)
			if _, err := c.cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: limitsNode}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating the Node %s: %v", limitsNode, err)
			}
			tc := newTokenClient(t, c.cp, limitsTokenID+"."+limitsTokenSecret)
			if who := whoAmI(ctx, t, tc.rest); who.Username != "system:bootstrap:"+limitsTokenID ||
				!slices.Contains(who.Groups, "system:bootstrappers") || !slices.Contains(who.Groups, "system:bootstrappers:kubeadm:default-node-token") {
				t.Fatalf("the token authenticates as %q in %q", who.Username, who.Groups)
			}
			t.Run("requests", func(t *testing.T) {
				for _, r := range tokenRequests() {
					code, body := tc.do(ctx, t, r)
					switch {
					case code == http.StatusUnauthorized:
						t.Errorf("%s (%s %s): 401: the token was not accepted", r.what, r.method, r.path)
					case r.allowed && (code < 200 || code > 299):
						t.Errorf("%s (%s %s): %d, want it served:\n%s", r.what, r.method, r.path, code, body)
					case !r.allowed && code != http.StatusForbidden:
						t.Errorf("%s (%s %s): %d, want 403 Forbidden:\n%s", r.what, r.method, r.path, code, body)
					}
				}
			})
			t.Run("kubeadm-certs needs the certificate key", func(t *testing.T) { testCertsNeedKey(ctx, t, tc) })
			t.Run("only a node client certificate is issued", func(t *testing.T) { testTokenCertificates(ctx, t, tc) })
		})
	}
}

// writeRootFile writes a file into the control plane's root folder.
func writeRootFile(t *testing.T, cp *controlplane.ControlPlane, path, content string) {
	t.Helper()
	if err := os.WriteFile(cp.HostPath(path), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenClient makes requests with a bearer token and nothing else.
type tokenClient struct {
	http *http.Client
	host string
	// typed is client-go's typed clients with the token: the test plays
	// the joining node, whose requests kubeadm's own client never makes.
	typed *kubernetes.Clientset
	rest  rest.Interface
}

func newTokenClient(t *testing.T, cp *controlplane.ControlPlane, token string) *tokenClient {
	t.Helper()
	cfg := bareConfig(t, cp)
	cfg.BearerToken = token
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return &tokenClient{http: hc, host: cfg.Host, typed: typed, rest: typed.Discovery().RESTClient()}
}

// do makes one request and returns its status code and body.
func (tc *tokenClient) do(ctx context.Context, t *testing.T, r tokenRequest) (int, string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, strings.TrimSuffix(tc.host, "/")+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	switch r.method {
	case "PATCH":
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case "POST", "PUT":
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := tc.http.Do(req)
	if err != nil {
		t.Fatalf("%s (%s %s): %v", r.what, r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(data)
}

// testCertsNeedKey reads kubeadm-certs with the token, as a joining
// control-plane node does, and checks that what it gets holds no
// certificate or key in the clear and opens with the certificate key only.
func testCertsNeedKey(ctx context.Context, t *testing.T, tc *tokenClient) {
	raw, err := tc.rest.Get().AbsPath("/api/v1/namespaces/kube-system/secrets/" + copycerts.SecretName).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("reading kubeadm-certs with the token: %v", err)
	}
	var s corev1.Secret
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data) == 0 {
		t.Fatal("kubeadm-certs holds nothing")
	}
	for name, v := range s.Data {
		if block, _ := pem.Decode(v); block != nil || strings.Contains(string(v), "PRIVATE KEY") {
			t.Errorf("kubeadm-certs entry %s is readable without the key", name)
		}
	}
	wrong := strings.Repeat("0f", 32)
	if _, err := copycerts.Open(&s, wrong); !errors.Is(err, copycerts.ErrDecrypt) {
		t.Errorf("kubeadm-certs opened with another key: %v", err)
	}
	files, err := copycerts.Open(&s, limitsCertKey)
	if err != nil {
		t.Fatalf("kubeadm-certs does not open with the certificate key: %v", err)
	}
	if block, _ := pem.Decode(files["ca.key"]); block == nil {
		t.Errorf("kubeadm-certs opened with the key has no ca.key PEM: %v", slices.Collect(maps.Keys(files)))
	}
}

// testTokenCertificates posts certificate requests with the token: for
// a client certificate in system:masters (refused at once), for
// admin.conf's identity to the client signer and to the kubelet's signer,
// then a node's (what join's TLS bootstrap posts). Only the node's is
// approved and issued; the token cannot approve the others itself.
func testTokenCertificates(ctx context.Context, t *testing.T, tc *tokenClient) {
	api := tc.typed.CertificatesV1().CertificateSigningRequests()
	// The API server itself refuses a client certificate for
	// system:masters from anyone.
	masters := csrFor(t, "limits-masters", pkix.Name{CommonName: "evil", Organization: []string{"system:masters"}}, certificatesv1.KubeAPIServerClientSignerName)
	if _, err := api.Create(ctx, masters, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("posting a CSR for system:masters with the token: %v, want Forbidden", err)
	}
	// admin.conf's identity, to either client signer: posted, never
	// approved.
	admins := pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"}}
	refused := []*certificatesv1.CertificateSigningRequest{
		csrFor(t, "limits-admin-client", admins, certificatesv1.KubeAPIServerClientSignerName),
		csrFor(t, "limits-admin-kubelet-signer", admins, certificatesv1.KubeAPIServerClientKubeletSignerName),
	}
	for _, csr := range refused {
		if _, err := api.Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatalf("posting %s with the token: %v", csr.Name, err)
		}
	}
	good := csrFor(t, "limits-node-client", pkix.Name{CommonName: "system:node:" + limitsNode, Organization: []string{"system:nodes"}},
		certificatesv1.KubeAPIServerClientKubeletSignerName)
	if _, err := api.Create(ctx, good, metav1.CreateOptions{}); err != nil {
		t.Fatalf("posting the node's CSR with the token: %v", err)
	}
	eventually(ctx, t, "the node's CSR approved and issued", func() error {
		got, err := api.Get(ctx, good.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Certificate) == 0 {
			return fmt.Errorf("not issued yet (conditions %v)", got.Status.Conditions)
		}
		return nil
	})
	// The approver and the signer have seen the other two, posted first;
	// a moment more for good measure.
	time.Sleep(2 * time.Second)
	for _, csr := range refused {
		got, err := api.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) > 0 || len(got.Status.Certificate) > 0 {
			t.Errorf("%s (signer %s, subject %v) was decided: %v, certificate %d bytes", csr.Name, csr.Spec.SignerName, admins, got.Status.Conditions, len(got.Status.Certificate))
		}
		got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Evil", Message: "approved by a bootstrap token",
		})
		if _, err := api.UpdateApproval(ctx, got.Name, got, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the token approving %s: %v, want Forbidden", csr.Name, err)
		}
	}
}

// csrFor makes a CSR object for a subject and signer.
func csrFor(t *testing.T, name string, subject pkix.Name, signer string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}
