package v1beta4

import (
	"encoding/json"
	"fmt"
	"strings"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// BootstrapTokenString is a bootstrap token of the form "<id>.<secret>": a
// 6-character public ID and a 16-character secret, both [a-z0-9]. It is
// written to YAML and JSON as that one string. The secret must never be
// logged; String() is the only way to print it, on purpose.
type BootstrapTokenString struct {
	ID     string `json:"-"`
	Secret string `json:"-" datapolicy:"token"`
}

// ParseBootstrapTokenString checks the shape of token and splits it.
func ParseBootstrapTokenString(token string) (*BootstrapTokenString, error) {
	if !bootstraputil.IsValidBootstrapToken(token) {
		return nil, fmt.Errorf("the bootstrap token %q is not of the form %q", redactToken(token), "[a-z0-9]{6}.[a-z0-9]{16}")
	}
	id, secret, _ := strings.Cut(token, ".")
	return &BootstrapTokenString{ID: id, Secret: secret}, nil
}

// String returns the whole token, secret included.
func (t BootstrapTokenString) String() string {
	if t.ID == "" && t.Secret == "" {
		return ""
	}
	return t.ID + "." + t.Secret
}

// MarshalJSON writes the token as one string.
func (t BootstrapTokenString) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.String())
}

// UnmarshalJSON reads a token string and checks its shape.
func (t *BootstrapTokenString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a bootstrap token must be a string: %w", err)
	}
	parsed, err := ParseBootstrapTokenString(s)
	if err != nil {
		return err
	}
	*t = *parsed
	return nil
}

// redactToken keeps the public part of something that looks like a token
// and hides the rest, so a malformed secret never reaches an error message.
func redactToken(s string) string {
	if id, _, ok := strings.Cut(s, "."); ok {
		return id + ".<redacted>"
	}
	if len(s) > 6 {
		return s[:6] + "<redacted>"
	}
	return s
}
