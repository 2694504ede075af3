package discovery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
)

// VerifySignature checks a detached JWS (RFC 7515, appendix F: the
// compact form with the payload left out, "header..signature") over
// content, as the bootstrap signer writes them into cluster-info: the
// protected header must name algorithm HS256 and key ID tokenID, and the
// signature must be the HMAC-SHA256, keyed with tokenSecret, of the
// encoded header, a dot and the base64url-encoded content. The error never
// contains the secret.
func VerifySignature(jws string, content []byte, tokenID, tokenSecret string) error {
	encodedHeader, encodedSig, ok := strings.Cut(jws, "..")
	if !ok || encodedHeader == "" || encodedSig == "" || strings.Contains(encodedSig, ".") {
		return errors.New(`the signature is not a detached JWS of the form "header..signature"`)
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(encodedHeader)
	if err != nil {
		return fmt.Errorf("decoding the JWS header: %w", err)
	}
	var header struct {
		Alg  string   `json:"alg"`
		Kid  string   `json:"kid"`
		Crit []string `json:"crit"`
	}
	if err := json.Unmarshal(rawHeader, &header); err != nil {
		return fmt.Errorf("parsing the JWS header: %w", err)
	}
	if header.Alg != "HS256" {
		return fmt.Errorf("the JWS uses algorithm %q instead of HS256", header.Alg)
	}
	if header.Kid != tokenID {
		return fmt.Errorf("the JWS is for key ID %q instead of token ID %q", header.Kid, tokenID)
	}
	if len(header.Crit) > 0 {
		return fmt.Errorf("the JWS has critical header extensions %q, which are not understood", header.Crit)
	}
	sig, err := base64.RawURLEncoding.DecodeString(encodedSig)
	if err != nil {
		return fmt.Errorf("decoding the JWS signature: %w", err)
	}
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(encodedHeader + "." + base64.RawURLEncoding.EncodeToString(content)))
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return errors.New("the HMAC does not match the content and the token secret")
	}
	return nil
}

// parsePins checks CA pins of the form "sha256:<64 hex digits>" and
// returns them with the hex in lower case, the form CACertHash makes.
func parsePins(pins []string) ([]string, error) {
	out := make([]string, 0, len(pins))
	for _, p := range pins {
		kind, value, ok := strings.Cut(p, ":")
		if !ok || !strings.EqualFold(kind, "sha256") {
			return nil, fmt.Errorf("the CA pin %q is not of the form \"sha256:<hex>\"", p)
		}
		if b, err := hex.DecodeString(value); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("the CA pin %q does not hold %d hex-encoded bytes", p, sha256.Size)
		}
		out = append(out, "sha256:"+strings.ToLower(value))
	}
	return out, nil
}

// checkPins returns nil when the public key of any certificate in the PEM
// bundle caPEM matches any of pins, and otherwise an error wrapping
// ErrPinMismatch that names the hashes found.
func checkPins(caPEM []byte, pins []string) error {
	found, err := bootstraptoken.CACertHashes(caPEM)
	if err != nil {
		return fmt.Errorf("the CA in cluster-info: %w", err)
	}
	for _, h := range found {
		if slices.Contains(pins, h) {
			return nil
		}
	}
	return fmt.Errorf("%w: the CA in cluster-info has %s, and the pins are %s",
		ErrPinMismatch, strings.Join(found, ", "), strings.Join(pins, ", "))
}
