// Package redacttest finds secrets in what a kubeadm command wrote, for
// the tests that run commands at high verbosity. It is for tests only.
package redacttest

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/copycerts"
)

var (
	anyToken       = regexp.MustCompile(`[a-z0-9]{6}\.[a-z0-9]{16}`)
	anyBase64      = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)
	tokenSecretish = regexp.MustCompile(`^[a-z0-9]{16}$`)
)

// Leaks lists the secrets in output that a log may not hold:
//
//   - a bootstrap token other than token, or token outside the lines that
//     print it on purpose ("Using token:", the join command's "--token",
//     "token create"'s line holding only the token);
//   - a base64-encoded token secret (16 lower-case letters and digits), as
//     in the data of a bootstrap token Secret;
//   - certKey (hexadecimal) outside the lines that print it on purpose
//     (the line after "Using certificate key:", "--certificate-key");
//   - base64 text that certKey decrypts: the data of the kubeadm-certs
//     Secret.
//
// token and certKey may be "" when the command has none.
func Leaks(output, token, certKey string) []string {
	key, _ := hex.DecodeString(certKey)
	var leaks []string
	lines := strings.Split(output, "\n")
	for i, line := range lines {
		onPurpose := token != "" && (strings.Contains(line, "--token ") || strings.Contains(line, "Using token:") || line == token)
		for _, tok := range anyToken.FindAllString(line, -1) {
			if tok != token || !onPurpose {
				leaks = append(leaks, "the bootstrap token "+tok+" in: "+clip(line))
			}
		}
		keyOnPurpose := strings.Contains(line, "--certificate-key") || (i > 0 && strings.Contains(lines[i-1], "Using certificate key:"))
		if certKey != "" && strings.Contains(line, certKey) && !keyOnPurpose {
			leaks = append(leaks, "the certificate key in: "+clip(line))
		}
		for _, b64 := range anyBase64.FindAllString(line, -1) {
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				continue
			}
			if tokenSecretish.Match(data) {
				leaks = append(leaks, "a base64 token secret "+b64+" in: "+clip(line))
			}
			if len(key) == copycerts.KeySize {
				if _, err := copycerts.Decrypt(data, key); err == nil {
					leaks = append(leaks, "kubeadm-certs data that the certificate key decrypts in: "+clip(line))
				}
			}
		}
	}
	return leaks
}

func clip(line string) string {
	if len(line) > 300 {
		return line[:300] + "…"
	}
	return line
}
