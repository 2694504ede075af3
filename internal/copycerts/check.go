package copycerts

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Secret keys whose entries must hold a certificate authority.
var caEntries = map[string]bool{"ca.crt": true, "front-proxy-ca.crt": true, "etcd-ca.crt": true}

// saKeyKey and saPubKey are the service-account key pair's entries: a
// private key and its public key, not a certificate.
const (
	saKeyKey = "sa.key"
	saPubKey = "sa.pub"
)

// partner is the entry holding the public half of the private key entry
// name: the certificate "X.crt" of "X.key", or sa.pub of sa.key.
func partner(name string) string {
	if name == saKeyKey {
		return saPubKey
	}
	return strings.TrimSuffix(name, ".key") + ".crt"
}

// parsed is an entry read for what its name says it holds.
type parsed struct {
	cert *x509.Certificate
	pub  crypto.PublicKey
	key  crypto.Signer
}

// parseEntry reads the decrypted entry name as what its name says: a PEM
// certificate (".crt"), a PEM private key (".key") or a PEM public key
// (sa.pub). Its errors never show key material.
func parseEntry(name string, b []byte) (parsed, error) {
	switch {
	case name == saPubKey:
		pub, err := pki.ParsePublicKeyPEM(b)
		if err != nil {
			return parsed{}, fmt.Errorf("entry %q is not a PEM public key: %w", name, err)
		}
		return parsed{pub: pub}, nil
	case strings.HasSuffix(name, ".key"):
		key, err := pki.ParseKeyPEM(b)
		if err != nil {
			return parsed{}, fmt.Errorf("entry %q is not a PEM private key: %w", name, err)
		}
		return parsed{key: key}, nil
	default:
		cert, err := pki.ParseCertPEM(b)
		if err != nil {
			return parsed{}, fmt.Errorf("entry %q is not a PEM certificate: %w", name, err)
		}
		return parsed{cert: cert, pub: cert.PublicKey}, nil
	}
}

// checkEntries checks the decrypted Secret before anything is written:
// each of files has an entry; each non-empty entry parses as what its name
// says; each private key is the key of its certificate (or of sa.pub),
// which is not empty; the three certificate authorities are CA
// certificates; and ca.crt is a CA of trustedCA (the cluster's CA bundle
// the joining node trusts since discovery) when that is given. An empty
// entry is a file the uploader did not have (an external CA's key) and is
// passed over. Every problem is reported, each naming its entry.
func checkEntries(plain map[string][]byte, files []File, trustedCA []byte) error {
	var errs []error
	entries := map[string]parsed{}
	for _, f := range files {
		b, ok := plain[f.Key]
		if !ok {
			errs = append(errs, fmt.Errorf("entry %q (for %s) is missing", f.Key, f.Path))
			continue
		}
		if len(b) == 0 {
			continue
		}
		p, err := parseEntry(f.Key, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		entries[f.Key] = p
	}
	for _, f := range files {
		p, ok := entries[f.Key]
		if !ok {
			continue
		}
		switch {
		case p.key != nil:
			other := partner(f.Key)
			pub, found := entries[other]
			if !found {
				if len(plain[other]) == 0 {
					errs = append(errs, fmt.Errorf("entry %q holds a private key but %q, its public half, is missing or empty", f.Key, other))
				}
				continue // a partner that does not parse is reported already
			}
			if !pki.PublicKeysEqual(pub.pub, p.key.Public()) {
				errs = append(errs, fmt.Errorf("entry %q is not the private key of %q", f.Key, other))
			}
		case caEntries[f.Key]:
			if !p.cert.IsCA || p.cert.KeyUsage&x509.KeyUsageCertSign == 0 {
				errs = append(errs, fmt.Errorf("entry %q is not a CA certificate (subject %q)", f.Key, p.cert.Subject.String()))
			}
		}
	}
	if ca, ok := entries["ca.crt"]; ok && len(trustedCA) > 0 {
		if err := trusted(ca.cert, trustedCA); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// trusted fails unless cert is one of the certificates of the PEM bundle.
func trusted(cert *x509.Certificate, bundle []byte) error {
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return fmt.Errorf("reading the cluster CA this node trusts since discovery: %w", err)
	}
	for _, c := range certs {
		if c.Equal(cert) {
			return nil
		}
	}
	return fmt.Errorf("entry %q is not the cluster CA this node trusts since discovery (its subject is %q)", "ca.crt", cert.Subject.String())
}
