package bootstraptoken

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// usagePrefix starts the data key of each usage ("usage-bootstrap-signing").
const usagePrefix = bootstrapapi.BootstrapTokenUsagePrefix

// SecretName is the name of the Secret that stores the token with this ID.
func SecretName(id string) string { return bootstrapapi.BootstrapTokenSecretPrefix + id }

// Secret returns the Secret that stores tok: its ID and secret, the
// description, the expiration (Expires if set, else now+TTL for a
// positive TTL; none otherwise, so the token never expires), one
// "usage-bootstrap-<usage>: true" per usage and the extra groups joined by
// commas. The expiration is written in UTC, RFC 3339, to the second.
func Secret(tok kubeadm.BootstrapToken, now time.Time) (*corev1.Secret, error) {
	if tok.Token == nil || tok.Token.ID == "" {
		return nil, errors.New("a bootstrap token without its value cannot be stored")
	}
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:     []byte(tok.Token.ID),
		bootstrapapi.BootstrapTokenSecretKey: []byte(tok.Token.Secret),
	}
	if tok.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(tok.Description)
	}
	switch {
	case tok.Expires != nil:
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(tok.Expires.UTC().Format(time.RFC3339))
	case tok.TTL != nil && tok.TTL.Duration > 0:
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(tok.TTL.Duration).UTC().Format(time.RFC3339))
	}
	for _, u := range tok.Usages {
		data[usagePrefix+u] = []byte("true")
	}
	if len(tok.Groups) > 0 {
		data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte(strings.Join(tok.Groups, ","))
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(tok.Token.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}, nil
}

// FromSecret reads a bootstrap token back from its Secret. The expiration
// keeps the offset it was written with. It fails when the Secret is not a
// well-formed token named after its ID; the error names the Secret, never
// the token secret.
func FromSecret(s *corev1.Secret) (*kubeadm.BootstrapToken, error) {
	id := string(s.Data[bootstrapapi.BootstrapTokenIDKey])
	if id == "" {
		return nil, fmt.Errorf("the bootstrap token Secret %s has no %s", s.Name, bootstrapapi.BootstrapTokenIDKey)
	}
	if want := SecretName(id); s.Name != want {
		return nil, fmt.Errorf("the bootstrap token Secret %s holds token ID %q, so it should be named %s", s.Name, id, want)
	}
	secret := string(s.Data[bootstrapapi.BootstrapTokenSecretKey])
	if secret == "" {
		return nil, fmt.Errorf("the bootstrap token Secret %s has no %s", s.Name, bootstrapapi.BootstrapTokenSecretKey)
	}
	if !bootstraputil.IsValidBootstrapToken(bootstraputil.TokenFromIDAndSecret(id, secret)) {
		return nil, fmt.Errorf("the bootstrap token Secret %s does not hold a token of the form [a-z0-9]{6}.[a-z0-9]{16}", s.Name)
	}
	tok := &kubeadm.BootstrapToken{
		Token:       &kubeadm.BootstrapTokenString{ID: id, Secret: secret},
		Description: string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey]),
	}
	if exp := string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return nil, fmt.Errorf("the bootstrap token Secret %s has an expiration that is not an RFC 3339 time: %q", s.Name, exp)
		}
		tok.Expires = &metav1.Time{Time: t}
	}
	for k, v := range s.Data {
		if u, ok := strings.CutPrefix(k, usagePrefix); ok && string(v) == "true" {
			tok.Usages = append(tok.Usages, u)
		}
	}
	sort.Strings(tok.Usages)
	if g := string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]); g != "" {
		tok.Groups = strings.Split(g, ",")
	}
	return tok, nil
}
