package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// ErrMissing reports that the certificate to renew does not exist.
var ErrMissing = errors.New("certificate not found")

// ExternalCAError reports that a certificate cannot be renewed because the
// key of its CA is not on this node (external CA mode).
type ExternalCAError struct {
	// KeyPath is where the CA key would be.
	KeyPath string
}

func (e *ExternalCAError) Error() string {
	return fmt.Sprintf("the CA key %s is absent (external CA)", e.KeyPath)
}

// renewSpec is the spec of a renewed certificate: the old one's subject,
// names and extended key usages, with a new lifetime.
func renewSpec(old *x509.Certificate, cfg *kubeadm.ClusterConfiguration) CertSpec {
	return CertSpec{
		CommonName:   old.Subject.CommonName,
		Organization: old.Subject.Organization,
		DNSNames:     old.DNSNames,
		IPs:          old.IPAddresses,
		Usages:       old.ExtKeyUsage,
		Validity:     CertificateValidity(cfg),
	}
}

// loadSigningCA reads a CA that must be able to sign: its key missing is
// an *ExternalCAError.
func loadSigningCA(certDir string, ca Cert) (*x509.Certificate, crypto.Signer, error) {
	cert, key, err := LoadCA(certDir, ca)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		return nil, nil, &ExternalCAError{KeyPath: KeyPath(certDir, ca.BaseName)}
	}
	return cert, key, nil
}

// RenewCert replaces the leaf certificate c in dir, whatever its expiry,
// with a new key of cfg's algorithm and a certificate that keeps the old
// one's subject, names and extended key usages, signed by its CA in dir
// and valid for cfg's certificateValidityPeriod from now. A missing
// certificate is ErrMissing, a CA without its key an *ExternalCAError;
// then nothing is written. The key is written before the certificate: an
// interrupted renewal is finished by renewing again.
func RenewCert(cfg *kubeadm.ClusterConfiguration, dir string, c Cert, opts Options) (*x509.Certificate, error) {
	if c.IsCA() {
		return nil, fmt.Errorf("%s is a CA; kubeadm does not renew CAs", c.Name)
	}
	opts = opts.forCluster(cfg)
	old, err := LoadCert(CertPath(dir, c.BaseName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", CertPath(dir, c.BaseName), ErrMissing)
	}
	if err != nil {
		return nil, err
	}
	ca, caKey, err := loadSigningCA(dir, mustLookup(c.CA))
	if err != nil {
		return nil, err
	}
	key, err := opts.newKey(cfg.KeyAlgorithm())
	if err != nil {
		return nil, fmt.Errorf("creating the key of %s: %w", CertPath(dir, c.BaseName), err)
	}
	cert, err := NewSignedCert(renewSpec(old, cfg), key.Public(), ca, caKey, opts.now())
	if err != nil {
		return nil, err
	}
	if err := writeCertAndKey(opts.writer(), dir, c.BaseName, cert, key); err != nil {
		return nil, err
	}
	return cert, nil
}

// RenewKubeconfigCert replaces the client certificate and key embedded in
// the kubeconfig file at path with a new key of cfg's algorithm and a
// certificate keeping the old one's subject, signed by the cluster CA in
// certDir. The rest of the file is kept; it is rewritten atomically. A
// missing file is ErrMissing, a CA without its key an *ExternalCAError.
func RenewKubeconfigCert(cfg *kubeadm.ClusterConfiguration, path, certDir string, opts Options) (*x509.Certificate, error) {
	old, err := ReadKubeconfigClientCert(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrMissing)
	}
	if err != nil {
		return nil, err
	}
	ca, caKey, err := loadSigningCA(certDir, mustLookup(CAName))
	if err != nil {
		return nil, err
	}
	key, err := opts.newKey(cfg.KeyAlgorithm())
	if err != nil {
		return nil, fmt.Errorf("creating the key for %s: %w", path, err)
	}
	cert, err := NewSignedCert(renewSpec(old, cfg), key.Public(), ca, caKey, opts.now())
	if err != nil {
		return nil, err
	}
	if err := replaceKubeconfigCert(path, key, cert, opts.writer()); err != nil {
		return nil, err
	}
	return cert, nil
}

// KeyAlgorithmOf names the algorithm kubeadm makes keys like pub with;
// ok is false for a key no algorithm of kubeadm's makes.
func KeyAlgorithmOf(pub crypto.PublicKey) (alg kubeadm.EncryptionAlgorithmType, ok bool) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		switch k.N.BitLen() {
		case 2048:
			return v1beta4.EncryptionAlgorithmRSA2048, true
		case 3072:
			return v1beta4.EncryptionAlgorithmRSA3072, true
		case 4096:
			return v1beta4.EncryptionAlgorithmRSA4096, true
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return v1beta4.EncryptionAlgorithmECDSAP256, true
		case elliptic.P384():
			return v1beta4.EncryptionAlgorithmECDSAP384, true
		}
	}
	return "", false
}
