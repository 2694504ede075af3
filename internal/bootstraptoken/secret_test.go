package bootstraptoken

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// testSecret is the secret half of every test token; no error or log line
// may contain it.
const testSecret = "0123456789abcdef"

var testNow = time.Date(2026, 11, 22, 2, 29, 24, 0, time.UTC)

func testToken(id string) *kubeadm.BootstrapTokenString {
	return &kubeadm.BootstrapTokenString{ID: id, Secret: testSecret}
}

func TestSecret(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	tests := []struct {
		name string
		tok  kubeadm.BootstrapToken
		want map[string]string
	}{
		{
			name: "kubeadm init's default token",
			tok: kubeadm.BootstrapToken{
				Token:  testToken("abcdef"),
				TTL:    &metav1.Duration{Duration: 24 * time.Hour},
				Usages: []string{"signing", "authentication"},
				Groups: []string{"system:bootstrappers:kubeadm:default-node-token"},
			},
			want: map[string]string{
				"token-id":                       "abcdef",
				"token-secret":                   testSecret,
				"expiration":                     "2026-11-23T02:29:24Z",
				"usage-bootstrap-signing":        "true",
				"usage-bootstrap-authentication": "true",
				"auth-extra-groups":              "system:bootstrappers:kubeadm:default-node-token",
			},
		},
		{
			name: "description and several groups",
			tok: kubeadm.BootstrapToken{
				Token:       testToken("ghijkl"),
				Description: "for the workers",
				TTL:         &metav1.Duration{Duration: 90 * time.Minute},
				Usages:      []string{"authentication"},
				Groups:      []string{"system:bootstrappers:a", "system:bootstrappers:b"},
			},
			want: map[string]string{
				"token-id":                       "ghijkl",
				"token-secret":                   testSecret,
				"description":                    "for the workers",
				"expiration":                     "2026-11-22T03:59:24Z",
				"usage-bootstrap-authentication": "true",
				"auth-extra-groups":              "system:bootstrappers:a,system:bootstrappers:b",
			},
		},
		{
			name: "ttl 0 never expires",
			tok:  kubeadm.BootstrapToken{Token: testToken("mnopqr"), TTL: &metav1.Duration{}, Usages: []string{"signing"}},
			want: map[string]string{"token-id": "mnopqr", "token-secret": testSecret, "usage-bootstrap-signing": "true"},
		},
		{
			name: "negative ttl never expires either, as upstream",
			tok:  kubeadm.BootstrapToken{Token: testToken("mnopqr"), TTL: &metav1.Duration{Duration: -time.Hour}},
			want: map[string]string{"token-id": "mnopqr", "token-secret": testSecret},
		},
		{
			name: "expires is written in UTC and wins over ttl",
			tok: kubeadm.BootstrapToken{
				Token:   testToken("stuvwx"),
				TTL:     &metav1.Duration{Duration: time.Hour},
				Expires: &metav1.Time{Time: time.Date(2030, 1, 1, 1, 0, 0, 0, berlin)},
			},
			want: map[string]string{"token-id": "stuvwx", "token-secret": testSecret, "expiration": "2030-01-01T00:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Secret(tt.tok, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != "bootstrap-token-"+tt.tok.Token.ID || s.Namespace != "kube-system" {
				t.Errorf("Secret is %s/%s", s.Namespace, s.Name)
			}
			if s.Type != "bootstrap.kubernetes.io/token" {
				t.Errorf("type %q", s.Type)
			}
			if len(s.Labels) != 0 || len(s.Annotations) != 0 || len(s.StringData) != 0 {
				t.Errorf("unexpected labels %v, annotations %v or stringData", s.Labels, s.Annotations)
			}
			got := map[string]string{}
			for k, v := range s.Data {
				got[k] = string(v)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("data\n got %v\nwant %v", got, tt.want)
			}
		})
	}
	if _, err := Secret(kubeadm.BootstrapToken{}, testNow); err == nil {
		t.Error("Secret of a token without a value: no error")
	}
}

func TestFromSecretRoundTrip(t *testing.T) {
	tok := kubeadm.BootstrapToken{
		Token:       testToken("abcdef"),
		Description: "round trip",
		TTL:         &metav1.Duration{Duration: time.Hour},
		Usages:      []string{"signing", "authentication"},
		Groups:      []string{"system:bootstrappers:a", "system:bootstrappers:b"},
	}
	s, err := Secret(tok, testNow)
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	want := kubeadm.BootstrapToken{
		Token:       testToken("abcdef"),
		Description: "round trip",
		Expires:     &metav1.Time{Time: testNow.Add(time.Hour)},
		Usages:      []string{"authentication", "signing"}, // sorted
		Groups:      []string{"system:bootstrappers:a", "system:bootstrappers:b"},
	}
	if !reflect.DeepEqual(*got.Token, *want.Token) || got.Description != want.Description ||
		!got.Expires.Equal(want.Expires) || !reflect.DeepEqual(got.Usages, want.Usages) || !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Errorf("FromSecret(Secret(tok)) = %+v, want %+v", got, want)
	}
}

func TestFromSecretKeepsOffset(t *testing.T) {
	s := tokenSecret("abcdef", map[string]string{"expiration": "2030-01-01T00:00:00+02:00"})
	tok, err := FromSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Expires.Format(time.RFC3339); got != "2030-01-01T00:00:00+02:00" {
		t.Errorf("expiration reads back as %s", got)
	}
}

func TestFromSecretErrors(t *testing.T) {
	tests := []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"no token-id", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Data: map[string][]byte{"token-secret": []byte(testSecret)}}, "has no token-id"},
		{"name does not match", renamed(tokenSecret("abcdef", nil), "bootstrap-token-zzzzzz"), `holds token ID "abcdef", so it should be named bootstrap-token-abcdef`},
		{"no token-secret", withoutKey(tokenSecret("abcdef", nil), "token-secret"), "has no token-secret"},
		{"malformed secret", tokenSecret("abcdef", map[string]string{"token-secret": "SHORT" + testSecret[:3]}), "does not hold a token of the form"},
		{"bad expiration", tokenSecret("abcdef", map[string]string{"expiration": "tomorrow"}), "not an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromSecret(tt.secret)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), testSecret[:3]) {
				t.Errorf("the error shows the token secret: %v", err)
			}
		})
	}
}

// tokenSecret is a well-formed token Secret with extra (or replaced) data.
func tokenSecret(id string, extra map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       "bootstrap.kubernetes.io/token",
		Data:       map[string][]byte{"token-id": []byte(id), "token-secret": []byte(testSecret)},
	}
	for k, v := range extra {
		s.Data[k] = []byte(v)
	}
	return s
}

func renamed(s *corev1.Secret, name string) *corev1.Secret { s.Name = name; return s }

func withoutKey(s *corev1.Secret, key string) *corev1.Secret { delete(s.Data, key); return s }
