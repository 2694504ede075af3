package discovery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// Token discovery reads cluster-info from a server it does not trust yet:
// these fuzz tests feed what such a server could send to the code that
// parses and checks it. Run one with, for example:
//
//	go test ./internal/discovery -run '^$' -fuzz FuzzVerifySignature -fuzztime 30s

// FuzzVerifySignature: no input makes VerifySignature panic, and it only
// accepts a JWS whose header and HMAC are right for the token.
func FuzzVerifySignature(f *testing.F) {
	const id, secret = "abcdef", "0123456789abcdef"
	content := []byte("apiVersion: v1\nkind: Config\n")
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"abcdef"}`))
	f.Add(sign(header, content, secret), content, id, secret)
	f.Add(header+"..", content, id, secret)
	f.Add("..", []byte{}, "", "")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"abcdef"}`))+"..AA", content, id, secret)
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"abcdef","crit":["x"]}`))+"..AA", content, id, secret)
	f.Fuzz(func(t *testing.T, jws string, content []byte, tokenID, tokenSecret string) {
		err := VerifySignature(jws, content, tokenID, tokenSecret)
		if err != nil {
			if tokenSecret != "" && len(tokenSecret) >= 8 && strings.Contains(err.Error(), tokenSecret) {
				t.Fatalf("the error shows the secret: %v", err)
			}
			return
		}
		encodedHeader, encodedSig, _ := strings.Cut(jws, "..")
		_, want, _ := strings.Cut(sign(encodedHeader, content, tokenSecret), "..")
		got, err := base64.RawURLEncoding.DecodeString(encodedSig)
		wantSig, _ := base64.RawURLEncoding.DecodeString(want)
		if err != nil || !hmac.Equal(got, wantSig) {
			t.Fatalf("accepted %q, whose signature is not the HMAC of its header and content", jws)
		}
	})
}

// sign is the detached JWS of content with the given encoded header.
func sign(encodedHeader string, content []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(encodedHeader + "." + base64.RawURLEncoding.EncodeToString(content)))
	return encodedHeader + ".." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// FuzzParseClusterInfo: no kubeconfig makes parseClusterInfo panic, and
// what it accepts has an https server and a CA.
func FuzzParseClusterInfo(f *testing.F) {
	f.Add([]byte(`apiVersion: v1
kind: Config
clusters:
- name: ""
  cluster:
    server: https://192.0.2.10:6443
    certificate-authority-data: Zm9v
`))
	f.Add([]byte("apiVersion: v1\nkind: Config\nclusters: []\n"))
	f.Add([]byte("{"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseClusterInfo(data)
		if err != nil {
			return
		}
		if !strings.HasPrefix(c.Server, "https://") || len(c.CertificateAuthorityData) == 0 {
			t.Fatalf("accepted a cluster without an https server or a CA: %+v", c)
		}
	})
}

// FuzzCheckPins: no CA bundle makes checkPins panic.
func FuzzCheckPins(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "sha256:"+strings.Repeat("ab", 32))
	f.Add([]byte{}, "sha256:")
	f.Fuzz(func(t *testing.T, caPEM []byte, pin string) {
		pins, err := parsePins([]string{pin})
		if err != nil {
			return
		}
		_ = checkPins(caPEM, pins)
	})
}
