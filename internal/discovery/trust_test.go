package discovery

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"k8s.io/cluster-bootstrap/token/jws"
)

func TestVerifySignature(t *testing.T) {
	const content = "apiVersion: v1\nkind: Config\n"
	sign := func(content, id, secret string) string {
		s, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(content, tokenID, tokenSecret)
	_, sig, _ := strings.Cut(good, "..")
	header := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }

	const refused = "not the one the token makes"
	tests := []struct {
		name, jws, content, id, secret string
		wantErr                        string
	}{
		{"made by the bootstrap signer's library", good, content, tokenID, tokenSecret, ""},
		{"other secret", good, content, tokenID, wrongSecret, refused},
		{"other content", good, content + "#", tokenID, tokenSecret, refused},
		{"other token ID", sign(content, otherID, tokenSecret), content, tokenID, tokenSecret, refused},
		{"algorithm none", header(`{"alg":"none","kid":"abc123"}`) + ".." + sig, content, tokenID, tokenSecret, refused},
		{"critical extension", header(`{"alg":"HS256","kid":"abc123","crit":["exp"]}`) + ".." + sig, content, tokenID, tokenSecret, refused},
		{"payload attached", strings.Replace(good, "..", ".e30.", 1), content, tokenID, tokenSecret, refused},
		{"empty", "", content, tokenID, tokenSecret, refused},
		{"header not base64url", "%%.." + sig, content, tokenID, tokenSecret, refused},
		{"header not JSON", header("alg") + ".." + sig, content, tokenID, tokenSecret, refused},
		{"signature not base64url", strings.SplitN(good, "..", 2)[0] + "..%%", content, tokenID, tokenSecret, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.jws, []byte(tt.content), tt.id, tt.secret)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			noSecret(t, "the error", err.Error())
		})
	}
}

func TestParsePins(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	got, err := parsePins([]string{"sha256:" + hex, "SHA256:" + strings.ToUpper(hex)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sha256:" + hex, "sha256:" + hex}; !reflect.DeepEqual(got, want) {
		t.Errorf("pins %q, want %q", got, want)
	}
	for _, bad := range []string{hex, "sha1:" + hex, "sha256:" + hex[:62], "sha256:" + hex + "00", "sha256:" + strings.Repeat("zz", 32)} {
		if _, err := parsePins([]string{bad}); err == nil {
			t.Errorf("pin %q accepted", bad)
		}
	}
}
