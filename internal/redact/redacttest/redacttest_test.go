package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/copycerts"
)

func TestLeaks(t *testing.T) {
	const token = "abcdef.0123456789abcdef"
	key := strings.Repeat("ab", 32)
	raw, _ := hex.DecodeString(key)
	sealed, err := copycerts.Encrypt([]byte("CA key"), raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, output string
		leaks        int
	}{
		{"printed on purpose", "[bootstrap-token] Using token: " + token + "\n  --token " + token + " \\\n" + token +
			"\n[upload-certs] Using certificate key:\n" + key + "\n  --certificate-key " + key, 0},
		{"redacted", `"data":{"token-secret":"<redacted>"} abcdef.<redacted>`, 0},
		{"token in a log line", "I0101 body=" + token, 1},
		{"another token", "Using token: qwerty.0123456789abcdef", 1},
		{"base64 token secret", `"token-secret":"` + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef")) + `"`, 1},
		{"certificate key in a log line", "I0101 key " + key, 1},
		{"kubeadm-certs data", `ca.key: ` + base64.StdEncoding.EncodeToString(sealed), 1},
	} {
		if got := Leaks(tt.output, token, key); len(got) != tt.leaks {
			t.Errorf("%s: %d leaks %q, want %d", tt.name, len(got), got, tt.leaks)
		}
	}
}
