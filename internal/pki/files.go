package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileWriter replaces a whole file at once; atomicfile.Replace is the real
// one. Tests inject failing writers to play a crash between two writes.
type FileWriter func(path string, data []byte, mode os.FileMode) error

// PublicKeyPath names "<dir>/<base>.pub", the public half of a key pair
// that has no certificate (the service-account key).
func PublicKeyPath(dir, base string) string { return filepath.Join(dir, base+".pub") }

// CSRPath names "<dir>/<base>.csr".
func CSRPath(dir, base string) string { return filepath.Join(dir, base+".csr") }

// mkdirFor creates the folder that will hold path.
func mkdirFor(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, CertDirMode); err != nil {
		return fmt.Errorf("creating folder %s: %w", dir, err)
	}
	return nil
}

func writeFile(w FileWriter, path string, data []byte, mode os.FileMode) error {
	if err := mkdirFor(path); err != nil {
		return err
	}
	return w(path, data, mode)
}

func writeCert(w FileWriter, dir, base string, cert *x509.Certificate) error {
	return writeFile(w, CertPath(dir, base), EncodeCertPEM(cert), CertMode)
}

func writeKey(w FileWriter, dir, base string, key crypto.Signer) error {
	b, err := EncodeKeyPEM(key)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", KeyPath(dir, base), err)
	}
	return writeFile(w, KeyPath(dir, base), b, KeyMode)
}

func writeCertAndKey(w FileWriter, dir, base string, cert *x509.Certificate, key crypto.Signer) error {
	if err := writeKey(w, dir, base, key); err != nil {
		return err
	}
	return writeCert(w, dir, base, cert)
}

// writePublicKey writes "<dir>/<base>.pub" with mode 0600, as kubeadm
// writes sa.pub.
func writePublicKey(w FileWriter, dir, base string, pub crypto.PublicKey) error {
	b, err := EncodePublicKeyPEM(pub)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", PublicKeyPath(dir, base), err)
	}
	return writeFile(w, PublicKeyPath(dir, base), b, KeyMode)
}

// exists reports whether path exists; an error other than "does not exist"
// (a permission problem, say) is returned, naming the path.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// ParsePublicKeyPEM reads a "PUBLIC KEY" PEM block.
func ParsePublicKeyPEM(data []byte) (crypto.PublicKey, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PEM public key found")
		}
		if block.Type == "PUBLIC KEY" {
			return x509.ParsePKIXPublicKey(block.Bytes)
		}
	}
}
