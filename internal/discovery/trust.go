package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
)

// VerifySignature checks the detached JWS the bootstrap signer wrote into
// cluster-info for tokenID over content, with the bootstrap token library
// the signer itself uses (k8s.io/cluster-bootstrap/token/jws): the library
// signs content again with the token and the signature must be the same,
// header included, so an algorithm, key ID or header other than the
// signer's is refused without being parsed. The error never contains the
// secret.
func VerifySignature(detached string, content []byte, tokenID, tokenSecret string) error {
	if !jws.DetachedTokenIsValid(detached, string(content), tokenID, tokenSecret) {
		return errors.New("the signature is not the one the token makes over this content")
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
