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
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// KeyGenerator makes a new private key of the given algorithm.
// NewPrivateKey is the real one.
type KeyGenerator func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error)

// Options are the side effects of Ensure and its siblings. The zero value
// uses the real clock, real key generation and atomicfile.Replace (a
// replaced file keeps its owner).
type Options struct {
	// Now dates new certificates and decides whether old ones expired.
	Now func() time.Time
	// NewKey makes the keys of new certificates.
	NewKey KeyGenerator
	// Write writes every file.
	Write FileWriter
	// CertMode, when set, is the mode certificates are written with
	// instead of CertMode (the CISHardening feature gate asks 0600).
	CertMode os.FileMode
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) newKey(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
	if o.NewKey != nil {
		return o.NewKey(alg)
	}
	return NewPrivateKey(alg)
}

// forCluster is o with the certificate mode of cfg's feature gates: 0600
// under the CISHardening profile, unless o names one.
func (o Options) forCluster(cfg *kubeadm.ClusterConfiguration) Options {
	if o.CertMode == 0 && cis.Enabled(cfg.FeatureGates) {
		o.CertMode = cis.FileMode
	}
	return o
}

// RestrictModes gives the certificate and key files of c in dir that exist
// the mode mode, when they have another: files kept from an earlier run or
// provided by the user, under the CISHardening profile. Idempotent.
func RestrictModes(dir string, c Cert, mode os.FileMode) error {
	for _, p := range []string{CertPath(dir, c.BaseName), KeyPath(dir, c.BaseName)} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != mode {
			if err := os.Chmod(p, mode); err != nil {
				return fmt.Errorf("restricting the mode of %s: %w", p, err)
			}
		}
	}
	return nil
}

func (o Options) writer() FileWriter {
	w := FileWriter(atomicfile.Replace)
	if o.Write != nil {
		w = o.Write
	}
	if o.CertMode == 0 || o.CertMode == CertMode {
		return w
	}
	return func(path string, data []byte, mode os.FileMode) error {
		if mode == CertMode {
			mode = o.CertMode
		}
		return w(path, data, mode)
	}
}

// Outcome says what Ensure did.
type Outcome int

const (
	// Generated: a new key and certificate were written.
	Generated Outcome = iota
	// Reused: valid files already on disk were kept untouched.
	Reused
	// Keyless: a CA certificate without its key was found and kept
	// ("external CA mode"): nothing it signs can be made on this node.
	Keyless
)

// Result is what Ensure reports for one certificate.
type Result struct {
	Cert    Cert
	Outcome Outcome
	// Certificate is the certificate now on disk (nil for the
	// service-account key).
	Certificate *x509.Certificate
}

// EnsureCert makes sure the certificate c and its key exist in dir and fit
// cfg, and reports what it did. It is idempotent and converges after a
// crash:
//
//   - a valid pair on disk (right CA, every required name and usage, not
//     expired) is reused, never rewritten;
//   - a missing certificate is created; a key left without it (a run
//     killed between writing the two) is kept and used when it loads and
//     is of the configured algorithm, else replaced; a leaf whose key
//     alone is missing is created anew;
//   - a CA certificate without its key is kept as an external CA: then a
//     missing certificate it signs is an error;
//   - a file that is present but unusable (unparsable, not matching its
//     key, signed by another CA, lacking a name or usage, expired) is an
//     error naming it, and nothing is written.
//
// A leaf needs its CA certificate in dir already.
func EnsureCert(cfg *kubeadm.InitConfiguration, dir string, c Cert, opts Options) (Result, error) {
	opts = opts.forCluster(&cfg.ClusterConfiguration)
	spec, err := c.Spec(cfg)
	if err != nil {
		return Result{}, err
	}
	if c.IsCA() {
		return ensureCA(cfg, dir, c, spec, opts)
	}
	return ensureLeaf(cfg, dir, c, spec, opts)
}

func ensureCA(cfg *kubeadm.InitConfiguration, dir string, c Cert, spec CertSpec, opts Options) (Result, error) {
	crtPath := CertPath(dir, c.BaseName)
	crtOK, err := exists(crtPath)
	if err != nil {
		return Result{}, err
	}
	if crtOK {
		cert, keyless, err := checkCA(dir, c, opts.now())
		if err != nil {
			return Result{}, err
		}
		res := Result{Cert: c, Outcome: Reused, Certificate: cert}
		if keyless {
			res.Outcome = Keyless
		}
		return res, nil
	}
	if err := noOrphans(dir, c); err != nil {
		return Result{}, err
	}
	key, left, err := keyForNewCert(cfg, dir, c.BaseName, opts)
	if err != nil {
		return Result{}, err
	}
	cert, err := NewSelfSignedCA(spec, key, opts.now())
	if err != nil {
		return Result{}, err
	}
	if err := writeNewPair(opts.writer(), dir, c.BaseName, cert, key, left); err != nil {
		return Result{}, err
	}
	return Result{Cert: c, Outcome: Generated, Certificate: cert}, nil
}

// keyForNewCert returns the key for a certificate about to be created in
// dir under base: the key left there without its certificate (left true,
// see leftKey), else a new one from opts. (When the certificate is there,
// the key is the missing file, so a new one is made.)
func keyForNewCert(cfg *kubeadm.InitConfiguration, dir, base string, opts Options) (key crypto.Signer, left bool, err error) {
	if key, ok := leftKey(KeyPath(dir, base), cfg.KeyAlgorithm()); ok {
		return key, true, nil
	}
	key, err = opts.newKey(cfg.KeyAlgorithm())
	if err != nil {
		return nil, false, fmt.Errorf("creating the key of %s: %w", CertPath(dir, base), err)
	}
	return key, false, nil
}

// leftKey returns the key at keyPath when it loads and is of algorithm
// alg: one a run wrote and was killed before writing its certificate
// (keys are written first). Using it, rather than a new key, keeps every
// key a run wrote, so a run after a crash ends with the files the crashed
// one began. ok is false when there is no such key.
func leftKey(keyPath string, alg kubeadm.EncryptionAlgorithmType) (key crypto.Signer, ok bool) {
	if found, err := exists(keyPath); err != nil || !found {
		return nil, false
	}
	key, err := LoadKey(keyPath)
	if err != nil || !keyOfAlgorithm(key, alg) {
		return nil, false
	}
	return key, true
}

// keyOfAlgorithm reports whether key is what alg ("" meaning RSA-2048)
// makes.
func keyOfAlgorithm(key crypto.Signer, alg kubeadm.EncryptionAlgorithmType) bool {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		bits := k.N.BitLen()
		switch alg {
		case "", v1beta4.EncryptionAlgorithmRSA2048:
			return bits == 2048
		case v1beta4.EncryptionAlgorithmRSA3072:
			return bits == 3072
		case v1beta4.EncryptionAlgorithmRSA4096:
			return bits == 4096
		}
	case *ecdsa.PrivateKey:
		switch alg {
		case v1beta4.EncryptionAlgorithmECDSAP256:
			return k.Curve == elliptic.P256()
		case v1beta4.EncryptionAlgorithmECDSAP384:
			return k.Curve == elliptic.P384()
		}
	}
	return false
}

// writeNewPair writes a new certificate and, unless it is the key already
// on disk (kept), its key.
func writeNewPair(w FileWriter, dir, base string, cert *x509.Certificate, key crypto.Signer, kept bool) error {
	if kept {
		return writeCert(w, dir, base, cert)
	}
	return writeCertAndKey(w, dir, base, cert, key)
}

// noOrphans refuses to create the missing CA certificate of ca while a
// certificate it signed is still in dir: a new CA would not have signed
// it, so that certificate would be reported unusable right after the CA
// was replaced, leaving a half-changed tree. Our own runs write a CA
// before what it signs, so this is never a crash's leftover.
func noOrphans(dir string, ca Cert) error {
	for _, c := range CertTable() {
		if c.CA != ca.Name {
			continue
		}
		ok, err := exists(CertPath(dir, c.BaseName))
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s does not exist but %s, which it signed, does: restore the CA, or delete the certificates it signed and their keys",
				CertPath(dir, ca.BaseName), CertPath(dir, c.BaseName))
		}
	}
	return nil
}

// checkCA loads and checks an existing CA certificate, and its key when
// present. keyless reports a certificate without a key.
func checkCA(dir string, c Cert, now time.Time) (cert *x509.Certificate, keyless bool, err error) {
	crtPath, keyPath := CertPath(dir, c.BaseName), KeyPath(dir, c.BaseName)
	cert, err = LoadCert(crtPath)
	if err != nil {
		return nil, false, fmt.Errorf("reading CA certificate: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, false, fmt.Errorf("%s is not a CA certificate", crtPath)
	}
	if !now.Before(cert.NotAfter) {
		return nil, false, fmt.Errorf("CA certificate %s expired on %s", crtPath, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return nil, false, err
	}
	if !keyOK {
		return cert, true, nil
	}
	key, err := LoadKey(keyPath)
	if err != nil {
		return nil, false, fmt.Errorf("reading CA key: %w", err)
	}
	if !PublicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, false, fmt.Errorf("%s does not hold the key of %s", keyPath, crtPath)
	}
	return cert, false, nil
}

// LoadCA reads the CA named name from dir: its certificate, and its key
// (nil when absent: an external CA).
func LoadCA(dir string, ca Cert) (*x509.Certificate, crypto.Signer, error) {
	crtPath, keyPath := CertPath(dir, ca.BaseName), KeyPath(dir, ca.BaseName)
	cert, err := LoadCert(crtPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA certificate: %w", err)
	}
	keyOK, err := exists(keyPath)
	if err != nil || !keyOK {
		return cert, nil, err
	}
	key, err := LoadKey(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA key: %w", err)
	}
	if !PublicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, nil, fmt.Errorf("%s does not hold the key of %s", keyPath, crtPath)
	}
	return cert, key, nil
}

func ensureLeaf(cfg *kubeadm.InitConfiguration, dir string, c Cert, spec CertSpec, opts Options) (Result, error) {
	crtPath, keyPath := CertPath(dir, c.BaseName), KeyPath(dir, c.BaseName)
	caCert, ok := LookupCert(c.CA)
	if !ok {
		return Result{}, fmt.Errorf("certificate %s names the unknown CA %q", c.Name, c.CA)
	}
	caCrtPath, caKeyPath := CertPath(dir, caCert.BaseName), KeyPath(dir, caCert.BaseName)
	crtOK, err := exists(crtPath)
	if err != nil {
		return Result{}, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return Result{}, err
	}
	caOK, err := exists(caCrtPath)
	if err != nil {
		return Result{}, err
	}
	if !caOK {
		if crtOK {
			return Result{}, fmt.Errorf("%s exists but its CA certificate %s does not: restore the CA, or delete %s and its key", crtPath, caCrtPath, crtPath)
		}
		return Result{}, fmt.Errorf("cannot create %s: its CA certificate %s does not exist (create the CA first)", crtPath, caCrtPath)
	}
	ca, caKey, err := LoadCA(dir, caCert)
	if err != nil {
		return Result{}, err
	}
	if crtOK && keyOK {
		cert, err := CheckLeaf(dir, c, spec, ca, opts.now())
		if err != nil {
			return Result{}, err
		}
		return Result{Cert: c, Outcome: Reused, Certificate: cert}, nil
	}
	if caKey == nil {
		missing := crtPath
		if crtOK {
			missing = keyPath
		}
		return Result{}, fmt.Errorf("%s is missing and cannot be created: the CA key %s is absent (external CA mode), so every certificate the CA signs must be provided", missing, caKeyPath)
	}
	key, left, err := keyForNewCert(cfg, dir, c.BaseName, opts)
	if err != nil {
		return Result{}, err
	}
	cert, err := NewSignedCert(spec, key.Public(), ca, caKey, opts.now())
	if err != nil {
		return Result{}, err
	}
	if err := writeNewPair(opts.writer(), dir, c.BaseName, cert, key, left); err != nil {
		return Result{}, err
	}
	return Result{Cert: c, Outcome: Generated, Certificate: cert}, nil
}

// CheckLeaf loads the pair of leaf certificate c from dir and checks it
// against spec and its CA certificate: the key matches, the CA signed it,
// it is not expired, and it has every extended key usage and subject
// alternative name of spec (it may have more). Errors name the file.
func CheckLeaf(dir string, c Cert, spec CertSpec, ca *x509.Certificate, now time.Time) (*x509.Certificate, error) {
	crtPath := CertPath(dir, c.BaseName)
	cert, _, err := LoadCertAndKey(dir, c.BaseName)
	if err != nil {
		return nil, err
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return nil, fmt.Errorf("%s is not signed by the CA in %s: %w", crtPath, CertPath(dir, mustLookup(c.CA).BaseName), err)
	}
	if !now.Before(cert.NotAfter) {
		return nil, fmt.Errorf("certificate %s expired on %s", crtPath, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if err := covers(cert, spec); err != nil {
		return nil, fmt.Errorf("%s: %w; delete it and its key to have them created again", crtPath, err)
	}
	return cert, nil
}

func mustLookup(name string) Cert {
	c, _ := LookupCert(name)
	return c
}

// covers reports what cert lacks of spec's usages and names.
func covers(cert *x509.Certificate, spec CertSpec) error {
	var missing []string
	for _, u := range spec.Usages {
		if !slices.Contains(cert.ExtKeyUsage, u) && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageAny) {
			missing = append(missing, "extended key usage "+usageName(u))
		}
	}
	for _, n := range spec.DNSNames {
		if !slices.ContainsFunc(cert.DNSNames, func(h string) bool { return strings.EqualFold(h, n) }) {
			missing = append(missing, "DNS name "+n)
		}
	}
	for _, ip := range spec.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, func(h net.IP) bool { return h.Equal(ip) }) {
			missing = append(missing, "IP address "+ip.String())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("the certificate lacks the " + strings.Join(missing, ", the "))
}

func usageName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageServerAuth:
		return "server auth"
	case x509.ExtKeyUsageClientAuth:
		return "client auth"
	}
	return fmt.Sprintf("#%d", u)
}

// NeedsKey reports whether EnsureCert would have to make a new key for c:
// its certificate is missing, or only its key is and the CA can sign.
// It does not validate anything; problems are left for EnsureCert.
func NeedsKey(dir string, c Cert) bool {
	crtOK, err1 := exists(CertPath(dir, c.BaseName))
	keyOK, err2 := exists(KeyPath(dir, c.BaseName))
	if err1 != nil || err2 != nil {
		return false
	}
	if !crtOK {
		if c.IsCA() {
			return true
		}
		// A leaf needs its CA's key to be made (the CA may be created
		// first in the same run).
		caKey, err := exists(KeyPath(dir, mustLookup(c.CA).BaseName))
		caCrt, err2 := exists(CertPath(dir, mustLookup(c.CA).BaseName))
		return err == nil && err2 == nil && (caKey || !caCrt)
	}
	if c.IsCA() || keyOK {
		return false
	}
	caKey, err := exists(KeyPath(dir, mustLookup(c.CA).BaseName))
	return err == nil && caKey
}

// KeylessCA reports whether dir holds the certificate of CA ca but not its
// key (external CA mode).
func KeylessCA(dir string, ca Cert) bool {
	crt, err1 := exists(CertPath(dir, ca.BaseName))
	key, err2 := exists(KeyPath(dir, ca.BaseName))
	return err1 == nil && err2 == nil && crt && !key
}

// EnsureServiceAccountKey makes sure the service-account signing key pair
// sa.key and sa.pub exists in dir. An existing sa.key is kept; a missing
// sa.pub is written from it, a sa.pub that is not its public half is an
// error. Without sa.key a new pair is made with cfg's key algorithm. It is
// idempotent.
func EnsureServiceAccountKey(cfg *kubeadm.InitConfiguration, dir string, opts Options) (Outcome, error) {
	keyPath := KeyPath(dir, ServiceAccountKeyBase)
	pubPath := PublicKeyPath(dir, ServiceAccountKeyBase)
	keyOK, err := exists(keyPath)
	if err != nil {
		return 0, err
	}
	if keyOK {
		key, err := LoadKey(keyPath)
		if err != nil {
			return 0, fmt.Errorf("reading the service-account key: %w", err)
		}
		pubOK, err := exists(pubPath)
		if err != nil {
			return 0, err
		}
		if !pubOK {
			if err := writePublicKey(opts.writer(), dir, ServiceAccountKeyBase, key.Public()); err != nil {
				return 0, err
			}
			return Reused, nil
		}
		data, err := boundedread.ReadFile(pubPath, boundedread.MaxFile)
		if err != nil {
			return 0, err
		}
		pub, err := ParsePublicKeyPEM(data)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", pubPath, err)
		}
		if !PublicKeysEqual(pub, key.Public()) {
			return 0, fmt.Errorf("%s is not the public half of %s", pubPath, keyPath)
		}
		return Reused, nil
	}
	key, err := opts.newKey(cfg.KeyAlgorithm())
	if err != nil {
		return 0, fmt.Errorf("creating the service-account key: %w", err)
	}
	w := opts.writer()
	if err := writeKey(w, dir, ServiceAccountKeyBase, key); err != nil {
		return 0, err
	}
	if err := writePublicKey(w, dir, ServiceAccountKeyBase, key.Public()); err != nil {
		return 0, err
	}
	return Generated, nil
}

// NeedsServiceAccountKey reports whether EnsureServiceAccountKey would make
// a new key.
func NeedsServiceAccountKey(dir string) bool {
	ok, err := exists(KeyPath(dir, ServiceAccountKeyBase))
	return err == nil && !ok
}
