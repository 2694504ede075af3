package carotation

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// ServiceAccountKeyGrace is how long after the new service-account key
// began to sign finish keeps accepting tokens of the old one: the kubelet
// asks for a new token of a Pod when 80 % of its lifetime passed, an hour
// by default.
const ServiceAccountKeyGrace = time.Hour

// saSignedFile, in Folder, holds the time the API server began to sign
// with the new service-account key (RFC 3339).
const saSignedFile = "sa-signed"

// SAState is what the certificate folder holds of the service-account
// key pair: sa.key signs the tokens (the API server's
// --service-account-signing-key-file, the controller manager's
// --service-account-private-key-file); sa.pub lists the public keys whose
// tokens the API server accepts (--service-account-key-file), the one of
// sa.key first.
type SAState struct {
	KeyPath, PubPath string
	Key              crypto.Signer
	Accepted         []crypto.PublicKey
	// Next is the new key staged in Folder (nil before prepare).
	Next     crypto.Signer
	NextPath string
}

// ReadSA reads the service-account key pair of the certificate folder and
// the new key staged in Folder.
func ReadSA(certDir string) (*SAState, error) {
	s := &SAState{
		KeyPath:  pki.KeyPath(certDir, pki.ServiceAccountKeyBase),
		PubPath:  pki.PublicKeyPath(certDir, pki.ServiceAccountKeyBase),
		NextPath: pki.KeyPath(certDir, filepath.Join(Folder, pki.ServiceAccountKeyBase)),
	}
	var err error
	if s.Key, err = pki.LoadKey(s.KeyPath); err != nil {
		return nil, fmt.Errorf("reading the service-account key: %w", err)
	}
	data, err := boundedread.ReadFile(s.PubPath, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	if s.Accepted, err = parsePublicKeys(data); err != nil {
		return nil, fmt.Errorf("%s: %w", s.PubPath, err)
	}
	switch s.Next, err = pki.LoadKey(s.NextPath); {
	case errors.Is(err, fs.ErrNotExist):
		s.Next = nil
	case err != nil:
		return nil, fmt.Errorf("the new service-account key: %w", err)
	}
	return s, nil
}

// accepts reports whether sa.pub lists key's public half.
func (s *SAState) accepts(key crypto.Signer) bool {
	return key != nil && indexOfKey(s.Accepted, key.Public()) >= 0
}

// nextSigns reports whether sa.key is the new key.
func (s *SAState) nextSigns() bool {
	return s.Next != nil && pki.PublicKeysEqual(s.Key.Public(), s.Next.Public())
}

func indexOfKey(keys []crypto.PublicKey, k crypto.PublicKey) int {
	for i, x := range keys {
		if pki.PublicKeysEqual(x, k) {
			return i
		}
	}
	return -1
}

// keysOf returns the keys given, without repeats, in order.
func keysOf(keys ...crypto.PublicKey) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range keys {
		if k != nil && indexOfKey(out, k) < 0 {
			out = append(out, k)
		}
	}
	return out
}

// parsePublicKeys reads every PUBLIC KEY block of PEM data, in order.
func parsePublicKeys(data []byte) ([]crypto.PublicKey, error) {
	var out []crypto.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			continue
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return out, nil
}

// writePublicKeys makes sa.pub list want, in order, keeping its mode and
// owner; it reports whether it had to write.
func (s *SAState) writePublicKeys(want []crypto.PublicKey, dryRun bool) (bool, error) {
	same := len(want) == len(s.Accepted)
	for i := 0; same && i < len(want); i++ {
		same = pki.PublicKeysEqual(want[i], s.Accepted[i])
	}
	if same {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	var data []byte
	for _, k := range want {
		b, err := pki.EncodePublicKeyPEM(k)
		if err != nil {
			return false, err
		}
		data = append(data, b...)
	}
	return true, atomicfile.WriteLike(s.PubPath, data, s.PubPath, pki.KeyMode)
}

// useNextKey makes sa.key the new key, keeping its mode and owner (the
// API server and the controller manager read it); it reports whether it
// had to write.
func (s *SAState) useNextKey(dryRun bool) (bool, error) {
	if s.nextSigns() {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	data, err := boundedread.ReadFile(s.NextPath, boundedread.MaxFile)
	if err != nil {
		return false, err
	}
	return true, atomicfile.WriteLike(s.KeyPath, data, s.KeyPath, pki.KeyMode)
}

// prepareSAKey makes the new service-account key in Folder (phase
// prepare), of cfg's key algorithm; one already there is kept.
func prepareSAKey(cfg *kubeadm.ClusterConfiguration, certDir string, opts pki.Options, dryRun bool, out io.Writer) error {
	s, err := ReadSA(certDir)
	if err != nil {
		return err
	}
	if s.Next != nil {
		fmt.Fprintf(out, "[rotate-ca] The new service-account signing key is already made (%s)\n", s.NextPath)
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "[rotate-ca] Would make a new service-account signing key in %s\n", s.NextPath)
		return nil
	}
	key, err := newKey(opts, cfg.KeyAlgorithm())
	if err != nil {
		return fmt.Errorf("creating the new service-account key: %w", err)
	}
	data, err := pki.EncodeKeyPEM(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.NextPath), pki.CertDirMode); err != nil {
		return err
	}
	if err := atomicfile.Write(s.NextPath, data, pki.KeyMode); err != nil {
		return err
	}
	fmt.Fprintf(out, "[rotate-ca] Made the new service-account signing key: %s\n", s.NextPath)
	return nil
}

// saSignedPath is the record of when the new key began to sign.
func (l Layout) saSignedPath() string { return filepath.Join(l.Dir(), saSignedFile) }

// SASignedAt reads when the new service-account key began to sign on the
// node of l (false: not recorded).
func (l Layout) SASignedAt() (time.Time, bool, error) {
	data, err := boundedread.ReadFile(l.saSignedPath(), boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	at, err := time.Parse(time.RFC3339, strings.TrimSpace(string(data)))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("%s: %w", l.saSignedPath(), err)
	}
	return at, true, nil
}

// recordSASigned records at as the time the new key began to sign, unless
// a time is recorded already: a run that resumes after a crash records
// a later time than the real one, never an earlier one.
func (l Layout) recordSASigned(at time.Time, out io.Writer) error {
	if _, ok, err := l.SASignedAt(); ok || err != nil {
		return err
	}
	if err := atomicfile.Write(l.saSignedPath(), []byte(at.UTC().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return fmt.Errorf("recording when the new service-account key began to sign: %w", err)
	}
	fmt.Fprintf(out, "[rotate-ca] The API server signs service-account tokens with the new key since %s (recorded in %s)\n", at.UTC().Format(time.RFC3339), l.saSignedPath())
	return nil
}
