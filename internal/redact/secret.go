package redact

import (
	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// publicTokenEntries are the entries of a bootstrap token Secret that say
// nothing secret: its ID, description, expiration, usages and groups.
var publicTokenEntries = map[string]bool{
	bootstrapapi.BootstrapTokenIDKey:               true,
	bootstrapapi.BootstrapTokenDescriptionKey:      true,
	bootstrapapi.BootstrapTokenExpirationKey:       true,
	bootstrapapi.BootstrapTokenExtraGroupsKey:      true,
	bootstrapapi.BootstrapTokenUsageSigningKey:     true,
	bootstrapapi.BootstrapTokenUsageAuthentication: true,
}

// Secret replaces the value of every entry of s's data and stringData by
// Redacted, but for the public entries of a bootstrap token Secret, and
// returns s. s must be a copy of the object.
func Secret(s *corev1.Secret) *corev1.Secret {
	keep := func(key string) bool {
		return s.Type == bootstrapapi.SecretTypeBootstrapToken && publicTokenEntries[key]
	}
	for k := range s.Data {
		if !keep(k) {
			s.Data[k] = []byte(Redacted)
		}
	}
	for k := range s.StringData {
		if !keep(k) {
			s.StringData[k] = Redacted
		}
	}
	return s
}
