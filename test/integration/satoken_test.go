package integration

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// serviceAccountToken asks for an hour's token of the ServiceAccount
// default/rotation (made when missing), as the kubelet asks for a Pod's.
func serviceAccountToken(ctx context.Context, t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rotation", Namespace: "default"}}
	if _, err := c.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	hour := int64(3600)
	var tr *authenticationv1.TokenRequest
	err := retryFor(30*time.Second, func() error {
		var err error
		tr, err = c.CoreV1().ServiceAccounts("default").CreateToken(ctx, "rotation", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("asking for a service-account token: %v", err)
	}
	return tr.Status.Token
}

// checkToken checks that the API server accepts token (a call with it is
// authenticated: it may still be Forbidden while the RBAC authorizer of a
// restarted API server fills) or refuses it (Unauthorized).
func checkToken(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, what, token string, accepted bool) {
	t.Helper()
	cfg, err := cp.RESTConfig(cp.SuperAdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg = rest.AnonymousClientConfig(cfg)
	cfg.BearerToken = token
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got error
	err = retryFor(30*time.Second, func() error {
		_, got = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if got == nil || apierrors.IsForbidden(got) || apierrors.IsUnauthorized(got) {
			return nil
		}
		return got // the API server is not serving yet
	})
	switch {
	case err != nil:
		t.Errorf("%s: no answer: %v", what, err)
	case accepted && apierrors.IsUnauthorized(got):
		t.Errorf("%s: refused: %v", what, got)
	case !accepted && !apierrors.IsUnauthorized(got):
		t.Errorf("%s: accepted (%v)", what, got)
	default:
		t.Logf("%s: accepted %v (%v)", what, accepted, got)
	}
}

func retryFor(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkJWTSignature checks that pub signed the JWT token (RS256, or ES256
// and ES384 for ECDSA keys, as the API server signs with them).
func checkJWTSignature(token string, pub crypto.PublicKey) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT: %d parts", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	signed := []byte(parts[0] + "." + parts[1])
	switch k := pub.(type) {
	case *rsa.PublicKey:
		h := sha256.Sum256(signed)
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], sig)
	case *ecdsa.PublicKey:
		var h hash.Hash = sha256.New()
		if k.Curve.Params().BitSize == 384 {
			h = sha512.New384()
		}
		h.Write(signed)
		n := len(sig) / 2
		r, s := new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])
		if !ecdsa.Verify(k, h.Sum(nil), r, s) {
			return errors.New("ECDSA signature does not verify")
		}
		return nil
	}
	return fmt.Errorf("unexpected key type %T", pub)
}

// readTree returns the names and contents of the files under dir, to
// compare two moments.
func readTree(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines = append(lines, p+"\n"+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// createCAClients makes a kube-proxy DaemonSet and a CoreDNS Deployment
// that run no Pod here (no kubelet): a DaemonSet for no node, a
// Deployment of no replica; the controller manager still rolls them out.
func createCAClients(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"k8s-app": "rotation"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"rotation-test": "no-such-node"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	zero := int32(0)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if _, err := c.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if _, err := c.AppsV1().Deployments("kube-system").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkCAClientsRestarted checks that trust restarted the addons for the
// new CA and waited until their controller rolled them out.
func checkCAClientsRestarted(ctx context.Context, t *testing.T, c kubernetes.Interface, newCAHash string) {
	t.Helper()
	ds, err := c.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Spec.Template.Annotations["kubeadm.kubernetes.io/rotate-ca-restarted-for"]; got != newCAHash || ds.Generation < 2 || ds.Status.ObservedGeneration < ds.Generation {
		t.Errorf("DaemonSet kube-proxy: restarted for %q, generation %d, observed %d", got, ds.Generation, ds.Status.ObservedGeneration)
	}
	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations["kubeadm.kubernetes.io/rotate-ca-restarted-for"]; got != newCAHash || d.Generation < 2 || d.Status.ObservedGeneration < d.Generation {
		t.Errorf("Deployment coredns: restarted for %q, generation %d, observed %d", got, d.Generation, d.Status.ObservedGeneration)
	}
}
