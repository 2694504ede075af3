package carotation

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Folder is the folder, under the certificate folder, that holds a
// rotation's state: the new CAs and service-account key, the signing CA of
// the controller manager, the restarts still owed and when the new
// service-account key began to sign. It exists only while a rotation runs.
const Folder = "rotate-ca"

// Layout names the folders of a node.
type Layout struct {
	// CertDir is the certificate folder (/etc/kubernetes/pki).
	CertDir string
	// KubernetesDir holds the kubeconfig files (/etc/kubernetes).
	KubernetesDir string
	// ManifestDir holds the static Pod manifests (/etc/kubernetes/manifests).
	ManifestDir string
}

// Rotating reports whether a rotation is under way on the control-plane
// node whose certificate folder is certDir: the controller manager signs
// with the copy of its CA the trust phase made.
func Rotating(certDir string) bool {
	_, err := os.Stat(filepath.Join(certDir, signerCert))
	return err == nil
}

// Dir is the rotation's folder.
func (l Layout) Dir() string { return filepath.Join(l.CertDir, Folder) }

// Rotated are the CAs a rotation of the cluster of cfg replaces, as named
// in pki.CertTable: the cluster CA first, the front proxy CA, and the etcd
// CA unless etcd is external (kubeadm holds no key of it then).
func Rotated(cfg *kubeadm.ClusterConfiguration) []pki.Cert {
	names := []string{pki.CAName, pki.FrontProxyCAName}
	if cfg == nil || cfg.Etcd.External == nil {
		names = append(names, pki.EtcdCAName)
	}
	var out []pki.Cert
	for _, n := range names {
		c, _ := pki.LookupCert(n)
		out = append(out, c)
	}
	return out
}

// nextBase is the base name, under the certificate folder, of the new CA
// that replaces ca: its own base name under Folder (rotate-ca/ca,
// rotate-ca/etcd/ca).
func nextBase(ca pki.Cert) string { return filepath.Join(Folder, ca.BaseName) }

// CAState is what the certificate folder holds of one CA.
type CAState struct {
	CA pki.Cert
	// Signer is the certificate whose key is in the CA's key file: the
	// first of its certificate file, which may hold others after it (a
	// trust bundle). During a sign step killed between the CA's two files
	// it may be another of them.
	Signer *x509.Certificate
	Key    crypto.Signer
	// Trusted is every certificate of its certificate file.
	Trusted Bundle
	// Next is the new CA staged in Folder (nil before prepare).
	Next    *x509.Certificate
	NextKey crypto.Signer
}

// ReadCA reads the state of ca in the certificate folder. A CA without its
// key (external CA) is an error: a rotation makes and signs with keys.
func ReadCA(certDir string, ca pki.Cert) (*CAState, error) {
	s := &CAState{CA: ca}
	var err error
	if s.Trusted, err = ReadBundle(pki.CertPath(certDir, ca.BaseName)); err != nil {
		return nil, err
	}
	keyPath := pki.KeyPath(certDir, ca.BaseName)
	if s.Key, err = pki.LoadKey(keyPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the key of the %s (%s) is not on this node: kubeadm cannot rotate a CA it does not hold (external CA)", ca.Description, keyPath)
	} else if err != nil {
		return nil, err
	}
	// The key's certificate is the first one, except for the instant the
	// sign step has written the new key and not yet the reordered bundle.
	for _, c := range s.Trusted {
		if pki.PublicKeysEqual(c.PublicKey, s.Key.Public()) {
			s.Signer = c
			break
		}
	}
	if s.Signer == nil {
		return nil, fmt.Errorf("%s holds the key of no certificate of %s", keyPath, pki.CertPath(certDir, ca.BaseName))
	}
	next, nextKey, err := pki.LoadCertAndKey(certDir, nextBase(ca))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("the new %s: %w", ca.Description, err)
	default:
		s.Next, s.NextKey = next, nextKey
	}
	return s, nil
}

// certMode is the mode of the new CA certificates: under the
// CISHardening profile its mode, as every certificate of the node has
// (the controller manager's copy of the signing CA too, which takes it
// from them).
func certMode(cfg *kubeadm.ClusterConfiguration) os.FileMode {
	if cfg != nil && cis.Enabled(cfg.FeatureGates) {
		return cis.FileMode
	}
	return pki.CertMode
}

// Prepare makes the new CAs (phase prepare): for each rotated CA, a
// self-signed CA with the same subject, a new key of cfg's algorithm and
// cfg's CA validity, written to Folder; and a new service-account signing
// key of cfg's algorithm, Folder/sa.key. A new CA or key already there is
// kept, so running it again changes nothing; a key left without its
// certificate (a run killed between the two) is used for it.
func Prepare(cfg *kubeadm.ClusterConfiguration, certDir string, opts pki.Options, dryRun bool, out io.Writer) error {
	for _, ca := range Rotated(cfg) {
		s, err := ReadCA(certDir, ca)
		if err != nil {
			return err
		}
		crt, keyPath := pki.CertPath(certDir, nextBase(ca)), pki.KeyPath(certDir, nextBase(ca))
		if s.Next != nil {
			fmt.Fprintf(out, "[rotate-ca] The new %s is already made (%s), valid until %s\n", ca.Description, crt, s.Next.NotAfter.UTC().Format("2006-01-02"))
			continue
		}
		if dryRun {
			fmt.Fprintf(out, "[rotate-ca] Would make a new %s in %s\n", ca.Description, crt)
			continue
		}
		key, err := pki.LoadKey(keyPath)
		if err != nil || pki.PublicKeysEqual(key.Public(), s.Key.Public()) {
			if key, err = newKey(opts, cfg.KeyAlgorithm()); err != nil {
				return fmt.Errorf("creating the key of the new %s: %w", ca.Description, err)
			}
			if err := os.MkdirAll(filepath.Dir(keyPath), pki.CertDirMode); err != nil {
				return err
			}
			kb, err := pki.EncodeKeyPEM(key)
			if err != nil {
				return err
			}
			if err := atomicfile.Write(keyPath, kb, pki.KeyMode); err != nil {
				return err
			}
		}
		spec := pki.CertSpec{
			CommonName:   s.Signer.Subject.CommonName,
			Organization: s.Signer.Subject.Organization,
			IsCA:         true,
			Validity:     pki.CAValidity(cfg),
		}
		cert, err := pki.NewSelfSignedCA(spec, key, now(opts))
		if err != nil {
			return err
		}
		if err := atomicfile.Write(crt, pki.EncodeCertPEM(cert), certMode(cfg)); err != nil {
			return err
		}
		fmt.Fprintf(out, "[rotate-ca] Made the new %s: %s, valid until %s\n", ca.Description, crt, cert.NotAfter.UTC().Format("2006-01-02"))
	}
	return prepareSAKey(cfg, certDir, opts, dryRun, out)
}

func newKey(opts pki.Options, alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
	if opts.NewKey != nil {
		return opts.NewKey(alg)
	}
	return pki.NewPrivateKey(alg)
}

func now(opts pki.Options) time.Time {
	if opts.Now != nil {
		return opts.Now()
	}
	return time.Now()
}
