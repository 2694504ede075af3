package tokenformat

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
)

const (
	// idLength is the number of characters of a token's public ID.
	idLength = 6
	// secretLength is the number of characters of a token's secret.
	secretLength = 16

	// groupPrefix starts every extra group a bootstrap token may carry.
	groupPrefix = "system:bootstrappers:"
	// groupPattern is what error messages show for a rejected group; it is
	// the pattern the API server's bootstrap authenticator documents.
	groupPattern = `\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z`
	// maxGroupRest is the longest a group may be after its prefix.
	maxGroupRest = 256

	alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// The usages a bootstrap token may have, in the order error messages list
// them.
const (
	usageSigning        = "signing"
	usageAuthentication = "authentication"
)

// isTokenChar reports whether c may appear in a token's ID or secret.
func isTokenChar(c byte) bool {
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
}

func allTokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

// IsValidID reports whether id is six characters of [a-z0-9].
func IsValidID(id string) bool {
	return len(id) == idLength && allTokenChars(id)
}

// IsValid reports whether token is "<id>.<secret>" with a six-character ID
// and a sixteen-character secret, both [a-z0-9].
func IsValid(token string) bool {
	if len(token) != idLength+1+secretLength || token[idLength] != '.' {
		return false
	}
	return allTokenChars(token[:idLength]) && allTokenChars(token[idLength+1:])
}

// Join puts an ID and a secret together into a token string.
func Join(id, secret string) string { return id + "." + secret }

// Generate returns a new random token. Each character is drawn uniformly
// from [a-z0-9] with crypto/rand.
func Generate() (string, error) {
	id, err := randomString(idLength)
	if err != nil {
		return "", err
	}
	secret, err := randomString(secretLength)
	if err != nil {
		return "", err
	}
	return Join(id, secret), nil
}

// randomString draws n characters of alphabet without modulo bias: a random
// byte is used only when it falls below the largest multiple of the
// alphabet's size that fits in a byte.
func randomString(n int) (string, error) {
	const limit = 256 - 256%len(alphabet)
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("could not read random bytes for a token: %w", err)
		}
		for _, b := range buf {
			if int(b) >= limit {
				continue
			}
			out = append(out, alphabet[int(b)%len(alphabet)])
			if len(out) == n {
				break
			}
		}
	}
	return string(out), nil
}

// ValidateGroup checks that name is a group a bootstrap token may add its
// user to: "system:bootstrappers:" followed by 1 to 256 characters of
// [a-z0-9:-], the last one a letter or digit.
func ValidateGroup(name string) error {
	if isValidGroup(name) {
		return nil
	}
	return fmt.Errorf("bootstrap group %q is invalid (must match %s)", name, groupPattern)
}

func isValidGroup(name string) bool {
	rest, ok := strings.CutPrefix(name, groupPrefix)
	if !ok || len(rest) == 0 || len(rest) > maxGroupRest {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if isTokenChar(c) {
			continue
		}
		if (c == ':' || c == '-') && i < len(rest)-1 {
			continue
		}
		return false
	}
	return true
}

// ValidateUsages checks that every usage is a known one. The error lists
// the unknown usages once each, sorted, and then the known ones.
func ValidateUsages(usages []string) error {
	var unknown []string
	for _, u := range usages {
		if u != usageSigning && u != usageAuthentication {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	unknown = slices.Compact(unknown)
	return fmt.Errorf("invalid bootstrap token usage string: %s, valid usage options: %s",
		strings.Join(unknown, ","), usageSigning+","+usageAuthentication)
}
