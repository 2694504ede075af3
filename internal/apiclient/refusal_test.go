package apiclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

const (
	testToken  = "abcdef.0123456789abcdef"
	bareStatus = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`
	unauthz    = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	serverMsg  = `configmaps \"kubeadm-config\" is forbidden: User \"x\" cannot get resource \"configmaps\"`
	realDenial = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"` + serverMsg + `","reason":"Forbidden","code":403}`
)

// refusingServer answers every request with code and body.
func refusingServer(t *testing.T, code int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// clientCert returns a client certificate and key for CN cn in group org.
func clientCert(t *testing.T, cn, org string) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: []string{org}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// Issue 29: a 403 with an empty body (a proxy in the way, a server cut
// short) gave an error with an empty message; it now says what was
// refused, to whom, and the likely cause.
func TestRefusalsSayWhatAndWho(t *testing.T) {
	crt, key := clientCert(t, "kubernetes-admin", "kubeadm:cluster-admins")
	tests := []struct {
		name    string
		code    int
		body    string
		creds   func(*rest.Config)
		call    string // "get", "create", "list", "delete" (ConfigMaps), "version"
		want    []string
		exactly string // the message when the server's must be kept as it is
		is      func(error) bool
	}{
		{name: "403 with an empty body, bootstrap token", code: 403, creds: func(c *rest.Config) { c.BearerToken = testToken }, call: "get",
			want: []string{`get configmaps "kubeadm-config" in namespace "kube-system"`, "403 Forbidden", `user "system:bootstrap:abcdef"`, "auth-extra-groups must include system:bootstrappers:kubeadm:default-node-token"},
			is:   apierrors.IsForbidden},
		{name: "403 with a bare Status, client certificate", code: 403, body: bareStatus, creds: func(c *rest.Config) { c.CertData, c.KeyData = crt, key }, call: "get",
			want: []string{`get configmaps "kubeadm-config"`, "403 Forbidden", `user "kubernetes-admin" (groups kubeadm:cluster-admins)`},
			is:   apierrors.IsForbidden},
		{name: "403 with an empty body, anonymous", code: 403, call: "get",
			want: []string{`anonymous user "system:anonymous"`, "RBAC grants system:anonymous"}, is: apierrors.IsForbidden},
		{name: "401 Unauthorized, bootstrap token", code: 401, body: unauthz, creds: func(c *rest.Config) { c.BearerToken = testToken }, call: "delete",
			want: []string{`delete configmaps "kubeadm-config"`, "401 Unauthorized", `"authentication" usage`}, is: apierrors.IsUnauthorized},
		{name: "403 to a create with an empty body: the name comes from the object sent", code: 403, creds: func(c *rest.Config) { c.BearerToken = testToken }, call: "create",
			want: []string{`create configmaps "kubeadm-config" in namespace "kube-system"`, "403 Forbidden", "system:bootstrap:abcdef"}, is: apierrors.IsForbidden},
		{name: "403 to a list with a bare Status", code: 403, body: bareStatus, call: "list",
			want: []string{`list configmaps in namespace "kube-system"`, "403 Forbidden", "system:anonymous"}, is: apierrors.IsForbidden},
		{name: "403 to /version with an empty body", code: 403, creds: func(c *rest.Config) { c.BearerToken = testToken }, call: "version",
			want: []string{"get /version", "403 Forbidden", "system:bootstrap:abcdef"}, is: apierrors.IsForbidden},
		{name: "the server's own message, bootstrap token: the cause is added", code: 403, body: realDenial, creds: func(c *rest.Config) { c.BearerToken = testToken }, call: "get",
			want: []string{strings.ReplaceAll(serverMsg, `\"`, `"`), "auth-extra-groups"}, is: apierrors.IsForbidden},
		{name: "the server's own message, admin: kept", code: 403, body: realDenial, creds: func(c *rest.Config) { c.CertData, c.KeyData = crt, key }, call: "get",
			exactly: strings.ReplaceAll(serverMsg, `\"`, `"`), is: apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := refusingServer(t, tt.code, tt.body)
			cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
				CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			}}
			if tt.creds != nil {
				tt.creds(cfg)
			}
			c, err := FromRESTConfig(cfg, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			switch tt.call {
			case "get":
				_, err = c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
			case "create":
				_, err = c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config"}}, metav1.CreateOptions{})
			case "list":
				_, err = c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
			case "delete":
				err = c.CoreV1().ConfigMaps("kube-system").Delete(ctx, "kubeadm-config", metav1.DeleteOptions{})
			case "version":
				_, err = c.Discovery().ServerVersion()
			}
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("%v", err)
			if !tt.is(err) {
				t.Errorf("the error lost its status: %#v", err)
			}
			if tt.exactly != "" && err.Error() != tt.exactly {
				t.Errorf("message %q, want the server's %q", err, tt.exactly)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "0123456789abcdef") {
				t.Error("the message shows the token's secret")
			}
		})
	}
}
