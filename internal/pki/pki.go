package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Backdate is how far before "now" certificates become valid.
const Backdate = 5 * time.Minute

// File modes kubeadm uses.
const (
	KeyMode  os.FileMode = 0o600
	CertMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o700
	// CertDirMode is the mode of the certificate folders kubeadm creates
	// (the certificate folder and its etcd sub-folder).
	CertDirMode os.FileMode = 0o755
)

// NewPrivateKey creates a key of the given algorithm ("" means RSA-2048).
func NewPrivateKey(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
	switch alg {
	case "", v1beta4.EncryptionAlgorithmRSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case v1beta4.EncryptionAlgorithmRSA3072:
		return rsa.GenerateKey(rand.Reader, 3072)
	case v1beta4.EncryptionAlgorithmRSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	case v1beta4.EncryptionAlgorithmECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case v1beta4.EncryptionAlgorithmECDSAP384:
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	}
	return nil, fmt.Errorf("unknown key algorithm %q", alg)
}

// CertSpec describes a certificate to create.
type CertSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	// Usages are the extended key usages; a CA has none.
	Usages []x509.ExtKeyUsage
	IsCA   bool
	// Validity is the lifetime counted from now (not from the backdated start).
	Validity time.Duration
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).SetInt64(math.MaxInt64-1))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}

func template(spec CertSpec, now time.Time) (*x509.Certificate, error) {
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	t := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		NotBefore:    now.Add(-Backdate).UTC(),
		NotAfter:     now.Add(spec.Validity).UTC(),
		// kubeadm asks for key encipherment whatever the key type, ECDSA
		// included, and marks every certificate with basic constraints.
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           spec.Usages,
		BasicConstraintsValid: true,
	}
	if spec.IsCA {
		t.KeyUsage |= x509.KeyUsageCertSign
		t.IsCA = true
		t.ExtKeyUsage = nil
	}
	return t, nil
}

// NewSelfSignedCA creates a self-signed CA certificate for key. Without
// DNS names in spec, the CA's common name is its only one, as kubeadm's CAs
// carry it.
func NewSelfSignedCA(spec CertSpec, key crypto.Signer, now time.Time) (*x509.Certificate, error) {
	spec.IsCA = true
	if len(spec.DNSNames) == 0 && len(spec.IPs) == 0 && spec.CommonName != "" {
		spec.DNSNames = []string{spec.CommonName}
	}
	t, err := template(spec, now)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, t, t, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA certificate %q: %w", spec.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

// NewSignedCert creates a certificate for pub signed by the CA. Like
// kubeadm's, its end is not capped at the CA's: configuration validation
// warns when certificateValidityPeriod exceeds caCertificateValidityPeriod.
func NewSignedCert(spec CertSpec, pub crypto.PublicKey, ca *x509.Certificate, caKey crypto.Signer, now time.Time) (*x509.Certificate, error) {
	t, err := template(spec, now)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, t, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", spec.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

// EncodeCertPEM returns cert in PEM form.
func EncodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// EncodeKeyPEM returns key in PEM form: PKCS#1 for RSA ("RSA PRIVATE KEY")
// and SEC 1 for ECDSA ("EC PRIVATE KEY"), as kubeadm writes them.
func EncodeKeyPEM(key crypto.Signer) ([]byte, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
	case *ecdsa.PrivateKey:
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	}
	return nil, fmt.Errorf("unsupported private key type %T", key)
}

// EncodePublicKeyPEM returns the PKIX form of a public key ("PUBLIC KEY").
func EncodePublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParseCertPEM reads the first certificate of a PEM block list.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM certificate found")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// ParseKeyPEM reads a private key in PKCS#1, SEC 1 or PKCS#8 PEM form. Its
// errors never include the key material.
func ParseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		switch block.Type {
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, errors.New("malformed PKCS#8 private key")
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("unsupported private key type %T", k)
			}
			return s, nil
		}
	}
}

// CertPath and KeyPath name the files of a pair: "<dir>/<base>.crt|.key".
func CertPath(dir, base string) string { return filepath.Join(dir, base+".crt") }
func KeyPath(dir, base string) string  { return filepath.Join(dir, base+".key") }

// LoadCert reads a certificate file.
func LoadCert(path string) (*x509.Certificate, error) {
	b, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	c, err := ParseCertPEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LoadKey reads a private key file.
func LoadKey(path string) (crypto.Signer, error) {
	b, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	k, err := ParseKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadCertAndKey reads "<dir>/<base>.crt" and "<dir>/<base>.key" and checks
// that they belong together.
func LoadCertAndKey(dir, base string) (*x509.Certificate, crypto.Signer, error) {
	cert, err := LoadCert(CertPath(dir, base))
	if err != nil {
		return nil, nil, err
	}
	key, err := LoadKey(KeyPath(dir, base))
	if err != nil {
		return nil, nil, err
	}
	if !PublicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, nil, fmt.Errorf("%s does not hold the key of %s", KeyPath(dir, base), CertPath(dir, base))
	}
	return cert, key, nil
}

// PublicKeysEqual reports whether two public keys are the same.
func PublicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if e, ok := a.(equaler); ok {
		return e.Equal(b)
	}
	return false
}

// WriteCert writes cert to "<dir>/<base>.crt" (0644), creating the folders
// (0755).
func WriteCert(dir, base string, cert *x509.Certificate) error {
	return writeCert(atomicfile.Write, dir, base, cert)
}

// WriteKey writes key to "<dir>/<base>.key" (0600), creating the folders
// (0755).
func WriteKey(dir, base string, key crypto.Signer) error {
	return writeKey(atomicfile.Write, dir, base, key)
}

// WriteCertAndKey writes both files of a pair; the key first, so a crash in
// between leaves a key without a certificate (regenerated next time), never
// a certificate whose key is missing.
func WriteCertAndKey(dir, base string, cert *x509.Certificate, key crypto.Signer) error {
	return writeCertAndKey(atomicfile.Write, dir, base, cert, key)
}
