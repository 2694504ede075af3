package kubeconfig

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// Action says what Files.Ensure did.
type Action int

const (
	// Created: the file was missing and has been written.
	Created Action = iota
	// Kept: the file existed, trusts the cluster CA and was left alone.
	Kept
	// KeptExternal: as Kept, with an external CA (no CA key).
	KeptExternal
)

// Result reports what Files.Ensure did with one file.
type Result struct {
	Path   string
	Action Action
	// Warnings are findings about a kept file that do not make it
	// unusable, such as an API server URL other than the expected one.
	Warnings []string
}

// Files manages the kubeconfig files of one folder.
type Files struct {
	// Dir is the kubeconfig folder, /etc/kubernetes normally.
	Dir string
	// Issuer signs the client certificates of the files it creates; its
	// CA is also the one existing files must trust.
	Issuer Issuer
}

// Path returns where the file of spec lives.
func (f Files) Path(spec Spec) string { return filepath.Join(f.Dir, spec.FileName) }

// Ensure makes sure the file of spec exists and can be used. It is
// idempotent:
//
//   - a missing file is created, with key as its client key (a new key when
//     key is nil), unless the CA is external, which is an error;
//   - an existing file is kept as it is when the cluster of its current
//     context trusts the cluster CA (the first certificate of its CA data
//     is the cluster CA's), even if it names another API server (reported
//     as a warning) or another user, as upstream kubeadm does;
//   - an existing file that cannot be read, lacks its current context or
//     cluster, or trusts another CA is an error naming the file; it is not
//     replaced.
func (f Files) Ensure(spec Spec, key crypto.Signer) (Result, error) {
	path := f.Path(spec)
	res := Result{Path: path, Action: Kept}
	if f.Issuer.CA.External() {
		res.Action = KeptExternal
	}
	_, err := os.Stat(path)
	switch {
	case err == nil:
		w, err := Check(path, spec, f.Issuer.CA.Cert)
		res.Warnings = w
		return res, err
	case !errors.Is(err, fs.ErrNotExist):
		return res, fmt.Errorf("checking the kubeconfig file: %w", err)
	case f.Issuer.CA.External():
		return res, externalMissing(path)
	}
	cfg, err := f.Issuer.Config(spec, key)
	if err != nil {
		return res, fmt.Errorf("creating the kubeconfig file %s: %w", path, err)
	}
	if err := WriteFile(path, cfg); err != nil {
		return res, err
	}
	res.Action = Created
	return res, nil
}

func externalMissing(path string) error {
	return fmt.Errorf("the kubeconfig file %s is missing: with an external CA (the CA key is absent) kubeadm cannot create it, so it must be provided", path)
}

// Missing returns the specs whose files do not exist yet.
func (f Files) Missing(specs []Spec) []Spec {
	var out []Spec
	for _, s := range specs {
		if _, err := os.Stat(f.Path(s)); errors.Is(err, fs.ErrNotExist) {
			out = append(out, s)
		}
	}
	return out
}

// CheckProvided checks, for an external CA, that every file of specs is
// present and trusts the CA, as "kubeadm init" does before its phases run.
// It returns the first problem (in specs' order) and the warnings about
// the files it checked. It changes nothing.
func (f Files) CheckProvided(specs []Spec) ([]string, error) {
	var warnings []string
	for _, s := range specs {
		path := f.Path(s)
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return warnings, externalMissing(path)
			}
			return warnings, fmt.Errorf("checking the kubeconfig file: %w", err)
		}
		w, err := Check(path, s, f.Issuer.CA.Cert)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// Check inspects the existing kubeconfig file at path against spec and the
// cluster CA. It fails when the file cannot be read, its current context or
// that context's cluster is missing, its CA data (or the file the cluster
// names) is not a certificate, or its first CA certificate is not ca. An API
// server other than spec.Server is only a warning.
func Check(path string, spec Spec, ca *x509.Certificate) ([]string, error) {
	cfg, err := Load(path)
	if err != nil {
		return nil, err
	}
	cluster, err := CurrentCluster(path, cfg)
	if err != nil {
		return nil, err
	}
	data := cluster.CertificateAuthorityData
	if len(data) == 0 && cluster.CertificateAuthority != "" {
		if data, err = boundedread.ReadFile(cluster.CertificateAuthority, boundedread.MaxFile); err != nil {
			return nil, fmt.Errorf("the kubeconfig file %s: reading its CA certificate: %w", path, err)
		}
	}
	first, n, err := firstCert(data)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig file %s: its CA certificate is not valid: %w", path, err)
	}
	if !bytes.Equal(first.Raw, ca.Raw) {
		return nil, fmt.Errorf("the kubeconfig file %s trusts a CA (%q, the first of %d certificates) other than the cluster CA %q; remove the file to have it created again",
			path, first.Subject.String(), n, ca.Subject.String())
	}
	var warnings []string
	if cluster.Server != spec.Server {
		warnings = append(warnings, fmt.Sprintf("the kubeconfig file %s points to the API server %s, not %s as expected; keeping it as it is",
			path, cluster.Server, spec.Server))
	}
	return warnings, nil
}

// firstCert parses the first certificate of a PEM bundle and counts them.
func firstCert(data []byte) (*x509.Certificate, int, error) {
	var first *x509.Certificate
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		n++
		if first == nil {
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, 0, err
			}
			first = c
		}
	}
	if first == nil {
		return nil, 0, errors.New("no PEM certificate found")
	}
	return first, n, nil
}
