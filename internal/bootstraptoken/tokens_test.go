package bootstraptoken

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

func defaultToken(id string, ttl time.Duration) kubeadm.BootstrapToken {
	return kubeadm.BootstrapToken{
		Token:  testToken(id),
		TTL:    &metav1.Duration{Duration: ttl},
		Usages: []string{"signing", "authentication"},
		Groups: []string{NodeBootstrapGroup},
	}
}

func getSecret(t *testing.T, c *fake.Clientset, id string) *corev1.Secret {
	t.Helper()
	s, err := c.CoreV1().Secrets("kube-system").Get(context.Background(), "bootstrap-token-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the Secret of %s: %v", id, err)
	}
	return s
}

func TestCreateOrUpdateConverges(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	tokens := []kubeadm.BootstrapToken{defaultToken("abcdef", time.Hour), defaultToken("ghijkl", 0)}
	if err := CreateOrUpdate(ctx, c, tokens, testNow); err != nil {
		t.Fatal(err)
	}
	// Again, later and with a changed description: same Secrets, updated.
	tokens[0].Description = "changed"
	if err := CreateOrUpdate(ctx, c, tokens, testNow.Add(time.Minute)); err != nil {
		t.Fatalf("second run: %v", err)
	}
	var verbs []string
	for _, a := range c.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if got, want := strings.Join(verbs, ","), "get,create,get,create,get,update,get,update"; got != want {
		t.Errorf("API calls %s, want %s (a look, then a create or an update)", got, want)
	}
	s := getSecret(t, c, "abcdef")
	if got := string(s.Data["description"]); got != "changed" {
		t.Errorf("description after the update: %q", got)
	}
	if got := string(s.Data["expiration"]); got != "2026-11-22T03:30:24Z" {
		t.Errorf("expiration after the update: %q (it counts from the second run)", got)
	}
	list, _ := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Errorf("%d Secrets, want 2", len(list.Items))
	}
}

func TestCreateRefusesExistingID(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(tokenSecret("ghijkl", nil))
	tokens := []kubeadm.BootstrapToken{defaultToken("abcdef", time.Hour), defaultToken("ghijkl", time.Hour), defaultToken("mnopqr", time.Hour)}
	err := Create(ctx, c, tokens, testNow)
	var exists *ExistsError
	if !errors.As(err, &exists) || exists.ID != "ghijkl" {
		t.Fatalf("error %v, want an ExistsError for ghijkl", err)
	}
	if want := `a token with id "ghijkl" already exists`; err.Error() != want {
		t.Errorf("error %q, want upstream's %q", err, want)
	}
	getSecret(t, c, "abcdef") // created before the failure
	if _, err := c.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-mnopqr", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the token after the failure was created anyway (%v)", err)
	}
	if got := string(getSecret(t, c, "ghijkl").Data["usage-bootstrap-signing"]); got != "" {
		t.Error("the existing token was changed")
	}
}

func TestStoreErrorsHideTheSecret(t *testing.T) {
	for _, verb := range []string{"get", "create", "update"} {
		t.Run(verb, func(t *testing.T) {
			c := fake.NewClientset()
			if verb == "update" {
				c = fake.NewClientset(tokenSecret("abcdef", nil))
			}
			c.PrependReactor(verb, "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "bootstrap-token-abcdef", errors.New("no"))
			})
			err := CreateOrUpdate(context.Background(), c, []kubeadm.BootstrapToken{defaultToken("abcdef", time.Hour)}, testNow)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("error %v, want the Forbidden answer wrapped", err)
			}
			if !strings.Contains(err.Error(), `bootstrap token "abcdef"`) || strings.Contains(err.Error(), testSecret) {
				t.Errorf("error %q should name the token by its ID only", err)
			}
		})
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	opaque := tokenSecret("opaque", nil)
	opaque.Type = corev1.SecretTypeOpaque
	c := fake.NewClientset(
		tokenSecret("abcdef", map[string]string{"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true", "usage-bootstrap-extra": "false"}),
		withoutKey(tokenSecret("nosecr", nil), "token-secret"),
		opaque,
		tokenSecret("ghijkl", map[string]string{"expiration": "2030-01-01T00:00:00Z", "auth-extra-groups": "system:bootstrappers:a"}),
	)
	tokens, skipped, err := List(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tok := range tokens {
		ids = append(ids, tok.Token.ID)
	}
	if got := strings.Join(ids, ","); got != "abcdef,ghijkl" {
		t.Errorf("listed %s, want abcdef,ghijkl", got)
	}
	if got := strings.Join(tokens[0].Usages, ","); got != "authentication,signing" {
		t.Errorf("usages %s", got)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "bootstrap-token-nosecr has no token-secret") {
		t.Errorf("skipped %v", skipped)
	}
	list := c.Actions()[0].(clienttesting.ListAction)
	if got := list.GetListRestrictions().Fields.String(); got != "type=bootstrap.kubernetes.io/token" {
		t.Errorf("field selector %q", got)
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(tokenSecret("abcdef", nil))
	if err := Delete(ctx, c, "abcdef"); err != nil {
		t.Fatal(err)
	}
	err := Delete(ctx, c, "abcdef")
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `deleting bootstrap token "abcdef"`) {
		t.Errorf("deleting a missing token: %v", err)
	}
}

func TestParseID(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{"abcdef", "abcdef", ""},
		{"abcdef." + testSecret, "abcdef", ""},
		{"abcde", "", `"abcde" is neither`},
		{"ABCDEF", "", `"ABCDEF" is neither`},
		{"abcdef.0123456789abcdeX", "", `"abcdef.<redacted>" is neither`},
		{"abcdef0123456789abcdef", "", `"abcdef<redacted>" is neither`},
	}
	for _, tt := range tests {
		got, err := ParseID(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseID(%q) error %v, want %q", tt.in, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), "0123456789"):
			t.Errorf("ParseID(%q) error shows the secret: %v", tt.in, err)
		}
	}
}
