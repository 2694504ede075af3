package kubeconfig

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// FileMode is the mode of every kubeconfig file: they hold private keys.
const FileMode os.FileMode = 0o600

// DirMode is the mode of a kubeconfig folder kubeadm creates.
const DirMode os.FileMode = 0o755

// caBase is the base name of the cluster CA's files in the certificate
// folder.
const caBase = "ca"

// CA is the cluster CA.
type CA struct {
	Cert *x509.Certificate
	// Key is nil for an external CA: only its certificate is on disk, so
	// no new client certificate can be signed.
	Key crypto.Signer
}

// External reports whether the CA's key is absent.
func (ca CA) External() bool { return ca.Key == nil }

// LoadCA reads the cluster CA from certDir: ca.crt, and ca.key when it
// exists. A missing ca.key means an external CA; a missing ca.crt is an
// error.
func LoadCA(certDir string) (CA, error) {
	keyPath := pki.KeyPath(certDir, caBase)
	if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
		cert, err := pki.LoadCert(pki.CertPath(certDir, caBase))
		if err != nil {
			return CA{}, fmt.Errorf("loading the cluster CA certificate: %w", err)
		}
		return CA{Cert: cert}, nil
	}
	cert, key, err := pki.LoadCertAndKey(certDir, caBase)
	if err != nil {
		return CA{}, fmt.Errorf("loading the cluster CA: %w", err)
	}
	return CA{Cert: cert, Key: key}, nil
}

// LoadCAWithKey reads the cluster CA from certDir and fails when its key is
// missing.
func LoadCAWithKey(certDir string) (CA, error) {
	cert, key, err := pki.LoadCertAndKey(certDir, caBase)
	if err != nil {
		return CA{}, fmt.Errorf("loading the cluster CA: %w", err)
	}
	return CA{Cert: cert, Key: key}, nil
}

// Issuer creates kubeconfigs whose client certificates the CA signs.
type Issuer struct {
	CA CA
	// Validity is the client certificates' lifetime, counted from Now.
	Validity time.Duration
	// Algorithm is the type of the client keys it generates.
	Algorithm kubeadm.EncryptionAlgorithmType
	// Now is the clock certificates are dated by.
	Now func() time.Time
}

// Config returns the kubeconfig of spec. Unless spec carries a token, it
// holds a new client certificate for key (a new key of the issuer's
// algorithm when key is nil). Like upstream kubeadm, the certificate
// becomes valid when the CA did and expires Validity after now.
func (is Issuer) Config(spec Spec, key crypto.Signer) (*clientcmdapi.Config, error) {
	if is.CA.Cert == nil {
		return nil, errors.New("no cluster CA certificate")
	}
	if spec.ClientName == "" {
		return nil, errors.New("the client name is empty")
	}
	if spec.Token != "" {
		return NewConfig(spec, is.CA.Cert, clientcmdapi.AuthInfo{Token: spec.Token}), nil
	}
	if is.CA.External() {
		return nil, fmt.Errorf("cannot sign a client certificate for %q: the CA key is not available (external CA)", spec.ClientName)
	}
	if key == nil {
		var err error
		if key, err = pki.NewPrivateKey(is.Algorithm); err != nil {
			return nil, fmt.Errorf("generating the client key of %q: %w", spec.ClientName, err)
		}
	}
	now := time.Now
	if is.Now != nil {
		now = is.Now
	}
	// pki dates a certificate from its "now" minus Backdate; choose that
	// "now" so the start is the CA's own, and keep the end at now+Validity.
	start := is.CA.Cert.NotBefore.Add(pki.Backdate)
	end := now().Add(is.Validity)
	cert, err := pki.NewSignedCert(pki.CertSpec{
		CommonName:   spec.ClientName,
		Organization: spec.Organizations,
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		Validity:     end.Sub(start),
	}, key.Public(), is.CA.Cert, is.CA.Key, start)
	if err != nil {
		return nil, fmt.Errorf("creating the client certificate of %q: %w", spec.ClientName, err)
	}
	keyPEM, err := pki.EncodeKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the client key of %q: %w", spec.ClientName, err)
	}
	return NewConfig(spec, is.CA.Cert, clientcmdapi.AuthInfo{
		ClientCertificateData: pki.EncodeCertPEM(cert),
		ClientKeyData:         keyPEM,
	}), nil
}

// NewConfig returns a kubeconfig with one cluster (spec.ClusterName at
// spec.Server, trusting caCert), one user (spec.ClientName, authenticated by
// user) and one context joining them, which is current.
func NewConfig(spec Spec, caCert *x509.Certificate, user clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = spec.Server
	cluster.CertificateAuthorityData = pki.EncodeCertPEM(caCert)
	cfg.Clusters[spec.ClusterName] = cluster
	u := user
	cfg.AuthInfos[spec.ClientName] = &u
	ctx := clientcmdapi.NewContext()
	ctx.Cluster = spec.ClusterName
	ctx.AuthInfo = spec.ClientName
	cfg.Contexts[spec.ContextName()] = ctx
	cfg.CurrentContext = spec.ContextName()
	return cfg
}

// Encode returns cfg in the YAML form kubectl reads.
func Encode(cfg *clientcmdapi.Config) ([]byte, error) {
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encoding a kubeconfig: %w", err)
	}
	return b, nil
}

// WriteFile writes cfg to path atomically with FileMode, creating the
// folder (DirMode) when needed.
func WriteFile(path string, cfg *clientcmdapi.Config) error {
	b, err := Encode(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return fmt.Errorf("creating the kubeconfig folder: %w", err)
	}
	return atomicfile.Write(path, b, FileMode)
}

// currentContext returns cfg's current context; path names the file in
// errors.
func currentContext(path string, cfg *clientcmdapi.Config) (*clientcmdapi.Context, error) {
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("the kubeconfig file %s has no current context", path)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || ctx == nil {
		return nil, fmt.Errorf("the kubeconfig file %s has no context %q, which it names as its current one", path, cfg.CurrentContext)
	}
	return ctx, nil
}

// CurrentCluster returns the cluster of cfg's current context, read from
// the file at path (named in errors).
func CurrentCluster(path string, cfg *clientcmdapi.Config) (*clientcmdapi.Cluster, error) {
	ctx, err := currentContext(path, cfg)
	if err != nil {
		return nil, err
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("the kubeconfig file %s has no cluster %q, which its current context %q uses", path, ctx.Cluster, cfg.CurrentContext)
	}
	return cluster, nil
}

// CurrentUser returns the user of cfg's current context and its name,
// read from the file at path (named in errors).
func CurrentUser(path string, cfg *clientcmdapi.Config) (string, *clientcmdapi.AuthInfo, error) {
	ctx, err := currentContext(path, cfg)
	if err != nil {
		return "", nil, err
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	if user == nil {
		return "", nil, fmt.Errorf("the kubeconfig file %s has no user %q, which its current context %q uses", path, ctx.AuthInfo, cfg.CurrentContext)
	}
	return ctx.AuthInfo, user, nil
}

// ClientCertificateOf returns the client certificate of the current
// context's user of the kubeconfig file at path: the embedded one, or else
// the one in the file it names.
func ClientCertificateOf(path string) (*x509.Certificate, error) {
	cfg, err := Load(path)
	if err != nil {
		return nil, err
	}
	name, user, err := CurrentUser(path, cfg)
	if err != nil {
		return nil, err
	}
	data := user.ClientCertificateData
	if len(data) == 0 {
		if user.ClientCertificate == "" {
			return nil, fmt.Errorf("the kubeconfig file %s holds no client certificate for user %q", path, name)
		}
		if data, err = boundedread.ReadFile(user.ClientCertificate, boundedread.MaxFile); err != nil {
			return nil, fmt.Errorf("the client certificate of the kubeconfig file %s: %w", path, err)
		}
	}
	cert, err := pki.ParseCertPEM(data)
	if err != nil {
		return nil, fmt.Errorf("the client certificate of the kubeconfig file %s: %w", path, err)
	}
	return cert, nil
}
