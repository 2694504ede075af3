package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Redacted stands for a hidden value.
const Redacted = "<redacted>"

// masked stands for a hidden credential, as client-go writes it.
const masked = "<masked>"

// patterns are the expressions String looks for, compiled on first use:
// a command that logs nothing does not pay for them.
var patterns = sync.OnceValue(func() *expressions {
	return &expressions{
		privateKey:          regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),
		credentialEntry:     regexp.MustCompile(`(?i)(\b(?:token|client-key-data|password)"?\s*:\s*"?)([^\s"',}\]]+)`),
		authorizationHeader: regexp.MustCompile(`(?i)(\bauthorization"?\s*[:=]\s*"?)([^"'\n,;]+)`),
		bearer:              regexp.MustCompile(`(?i)\b(bearer\s+)([^\s"'<>,;]+)`),
		bootstrapToken:      regexp.MustCompile(`\b([a-z0-9]{6})\.[a-z0-9]{16}\b`),
		hexKey:              regexp.MustCompile(`\b[0-9a-fA-F]{64}\b`),
		truncation:          regexp.MustCompile(` \[truncated \d+ chars\]$`),
	}
})

type expressions struct {
	// privateKey is a PEM private key block (or its start, when the text
	// was cut short).
	privateKey *regexp.Regexp
	// credentialEntry is a kubeconfig's (or any YAML or JSON document's)
	// token, client key or password entry.
	credentialEntry *regexp.Regexp
	// authorizationHeader is an Authorization header's value, up to the
	// end of the line or of the quoted string it is in.
	authorizationHeader *regexp.Regexp
	// bearer is a bearer token anywhere.
	bearer *regexp.Regexp
	// bootstrapToken is "<id>.<secret>"; the ID is public.
	bootstrapToken *regexp.Regexp
	// hexKey is 64 hexadecimal digits: a certificate key (or a SHA-256
	// digest, kept when it says so).
	hexKey *regexp.Regexp
	// truncation is the note client-go adds to a body it cuts short.
	truncation *regexp.Regexp
}

// String returns s with the secrets the package documentation lists
// hidden. Text without any is returned as it is; hidden text is not
// hidden again.
func String(s string) string {
	p := patterns()
	s = p.privateKey.ReplaceAllString(s, "<private key redacted>")
	s = p.bootstrapToken.ReplaceAllString(s, "${1}."+Redacted)
	s = p.credentialEntry.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.credentialEntry.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "<") || strings.HasSuffix(sub[2], Redacted) {
			return m // hidden already (a bootstrap token keeps its ID)
		}
		return sub[1] + Redacted
	})
	s = p.authorizationHeader.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.authorizationHeader.FindStringSubmatch(m)
		value := strings.TrimSpace(sub[2])
		scheme, cred, found := strings.Cut(value, " ")
		switch {
		case value == "" || strings.HasPrefix(value, "<"):
			return m
		case !found:
			return sub[1] + masked
		case strings.HasPrefix(strings.TrimSpace(cred), "<"):
			return m
		}
		return sub[1] + scheme + " " + masked
	})
	s = p.bearer.ReplaceAllString(s, "${1}"+masked)
	return hideHexKeys(p.hexKey, s)
}

// hideHexKeys replaces runs of 64 hexadecimal digits, but for digests
// ("sha256:" before them).
func hideHexKeys(hexKey *regexp.Regexp, s string) string {
	locs := hexKey.FindAllStringIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] >= 7 && strings.EqualFold(s[l[0]-7:l[0]], "sha256:") {
			continue
		}
		b.WriteString(s[last:l[0]])
		b.WriteString(Redacted)
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
