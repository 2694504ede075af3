package integration

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// The control plane takes a few seconds to start, so one serves every
// check; they run in order (the RBAC check creates the admins' binding).
func TestControlPlaneFromOurFiles(t *testing.T) {
	began := time.Now()
	cp := controlplane.Start(t, controlplane.Options{})
	t.Logf("start until every component was ready: %v", time.Since(began).Round(time.Millisecond))

	t.Run("readyz answers the super-admin", func(t *testing.T) { testReadyz(t, cp) })
	t.Run("admin.conf needs the kubeadm:cluster-admins binding", func(t *testing.T) { testAdminBinding(t, cp) })
	t.Run("bootstrap signer signs cluster-info", func(t *testing.T) { testBootstrapSigner(t, cp) })
	t.Run("serving certificate verifies against ca.crt", func(t *testing.T) { testServingCert(t, cp) })
	t.Run("apiclient's clientset reads, writes and watches, within its request timeout", func(t *testing.T) { testAPIClient(t, cp) })
}

func testReadyz(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 30*time.Second)
	res := cp.Client().Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "1").Do(ctx)
	var code int
	res.StatusCode(&code)
	if err := res.Error(); err != nil || code != 200 {
		t.Fatalf("GET /readyz as super-admin: HTTP %d, %v", code, err)
	}
	body, _ := res.Raw()
	if !strings.Contains(string(body), "readyz check passed") {
		t.Errorf("GET /readyz?verbose: %s", body)
	}
	review := whoAmI(ctx, t, cp.Client().Discovery().RESTClient())
	if !slices.Contains(review.Groups, "system:masters") {
		t.Errorf("super-admin.conf authenticates as %q in %q, want group system:masters", review.Username, review.Groups)
	}
}

func testAdminBinding(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	admin, err := cp.ClientFor(cp.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	review := whoAmI(ctx, t, admin.Discovery().RESTClient())
	if review.Username != "kubernetes-admin" || !slices.Contains(review.Groups, "kubeadm:cluster-admins") {
		t.Errorf("admin.conf authenticates as %q in %q, want kubernetes-admin in kubeadm:cluster-admins", review.Username, review.Groups)
	}
	if _, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing nodes with admin.conf before the binding: %v, want Forbidden", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:cluster-admins"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "kubeadm:cluster-admins"}},
	}
	if _, err := cp.Client().RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the binding with super-admin.conf: %v", err)
	}
	eventually(ctx, t, "admin.conf lists nodes after the binding", func() error {
		_, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err
	})
}

func testBootstrapSigner(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 90*time.Second)
	const tokenID, tokenSecret = "fst1er", "0123456789abcdef" // a test-only token
	cs := cp.Client()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + tokenID, Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               tokenID,
			bootstrapapi.BootstrapTokenSecretKey:           tokenSecret,
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      "system:bootstrappers:kubeadm:default-node-token",
		},
	}
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the bootstrap token secret: %v", err)
	}
	ca, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"": {Server: cp.Endpoint(), CertificateAuthorityData: ca}},
	})
	if err != nil {
		t.Fatal(err)
	}
	clusterInfo := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(kubeconfig)},
	}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Create(ctx, clusterInfo, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating cluster-info: %v", err)
	}
	began := time.Now()
	var signature string
	eventually(ctx, t, "kube-controller-manager signs cluster-info", func() error {
		cm, err := cs.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var ok bool
		if signature, ok = cm.Data[bootstrapapi.JWSSignatureKeyPrefix+tokenID]; !ok {
			return fmt.Errorf("no %s%s in cluster-info yet", bootstrapapi.JWSSignatureKeyPrefix, tokenID)
		}
		return nil
	})
	t.Logf("cluster-info signed %v after it was created", time.Since(began).Round(time.Millisecond))
	if err := verifyDetachedJWS(signature, kubeconfig, tokenID, tokenSecret); err != nil {
		t.Errorf("signature of cluster-info: %v", err)
	}

	// The same token authenticates (--enable-bootstrap-token-auth).
	cfg, err := cp.RESTConfig(cp.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertData, cfg.KeyData = nil, nil
	cfg.BearerToken = tokenID + "." + tokenSecret
	bootstrap, err := apiclient.FromRESTConfig(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	review := whoAmI(ctx, t, bootstrap.Discovery().RESTClient())
	if review.Username != "system:bootstrap:"+tokenID || !slices.Contains(review.Groups, "system:bootstrappers") {
		t.Errorf("bootstrap token authenticates as %q in %q", review.Username, review.Groups)
	}
}

// verifyDetachedJWS checks a detached HS256 JWS ("header..signature") over
// content, keyed with the token secret, as joining nodes check cluster-info.
func verifyDetachedJWS(jws string, content []byte, tokenID, tokenSecret string) error {
	header, sig, ok := strings.Cut(jws, "..")
	if !ok {
		return fmt.Errorf("%q is not a detached JWS", jws)
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return fmt.Errorf("decoding the JWS header: %w", err)
	}
	var h struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("parsing the JWS header %s: %w", raw, err)
	}
	if h.Alg != "HS256" || h.Kid != tokenID {
		return fmt.Errorf("JWS header %s, want alg HS256 and kid %s", raw, tokenID)
	}
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(header + "." + base64.RawURLEncoding.EncodeToString(content)))
	want := base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return fmt.Errorf("the JWS signature does not match the content and token")
	}
	return nil
}

func testServingCert(t *testing.T, cp *controlplane.ControlPlane) {
	ca, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", cp.CACertPath())
	}
	tests := []struct {
		serverName string
		wantOK     bool
	}{
		{cp.AdvertiseAddress().String(), true},
		{"kubernetes.default.svc", true},
		{"kubernetes", true},
		{"kubernetes.default.svc.cluster.local", true},
		{"10.96.0.1", true}, // first address of the default service subnet
		{controlplane.DefaultNodeName, true},
		{"127.0.0.1", false}, // upstream adds it only through certSANs
		{"not-a-san.example", false},
	}
	addr := net.JoinHostPort(cp.AdvertiseAddress().String(), "6443")
	for _, tt := range tests {
		t.Run(tt.serverName, func(t *testing.T) {
			ctx := testContext(t, 15*time.Second)
			conn, err := cp.DialContext(ctx, "tcp", addr)
			if err != nil {
				t.Fatalf("dialing %s: %v", addr, err)
			}
			defer conn.Close()
			tlsConn := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: tt.serverName, MinVersion: tls.VersionTLS12})
			err = tlsConn.HandshakeContext(ctx)
			if tt.wantOK && err != nil {
				t.Errorf("TLS handshake as %q: %v", tt.serverName, err)
			}
			if !tt.wantOK && err == nil {
				t.Errorf("TLS handshake as %q succeeded; the name should not be in the certificate", tt.serverName)
			}
		})
	}
}

// whoAmI asks the server who the client of rc is (a SelfSubjectReview).
// It takes the REST client of a clientset (Discovery().RESTClient()).
func whoAmI(ctx context.Context, t *testing.T, rc rest.Interface) authenticationv1.UserInfo {
	t.Helper()
	body, err := rc.Post().AbsPath("/apis/authentication.k8s.io/v1/selfsubjectreviews").
		SetHeader("Content-Type", "application/json").
		Body([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)).
		Do(ctx).Raw()
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatalf("self subject review %s: %v", body, err)
	}
	return review.Status.UserInfo
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually retries f every 200ms until it succeeds or ctx ends.
func eventually(ctx context.Context, t *testing.T, what string, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: gave up: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
