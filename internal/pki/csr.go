package pki

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// NewCSR creates a certificate signing request for key with spec's subject
// and alternative names. Key usages are left to the signer.
func NewCSR(spec CertSpec, key crypto.Signer) (*x509.CertificateRequest, error) {
	t := &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:    spec.DNSNames,
		IPAddresses: spec.IPs,
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, t, key)
	if err != nil {
		return nil, fmt.Errorf("creating the signing request for %q: %w", spec.CommonName, err)
	}
	return x509.ParseCertificateRequest(der)
}

// EncodeCSRPEM returns csr in PEM form ("CERTIFICATE REQUEST").
func EncodeCSRPEM(csr *x509.CertificateRequest) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csr.Raw})
}

// CSRCerts are the certificates "certs generate-csr" makes requests for:
// every leaf of the table, the local etcd ones included even with an
// external etcd, as kubeadm does.
func CSRCerts() []Cert {
	var out []Cert
	for _, c := range CertTable() {
		if !c.IsCA() {
			out = append(out, c)
		}
	}
	return out
}

// CSRTargets lists the files "certs generate-csr" would create, in order:
// "<base>.key" and "<base>.csr" in certDir for each of CSRCerts, then each
// kubeconfig file and its ".csr" in kubeconfigDir.
func CSRTargets(certDir, kubeconfigDir string) []string {
	var paths []string
	for _, c := range CSRCerts() {
		paths = append(paths, KeyPath(certDir, c.BaseName), CSRPath(certDir, c.BaseName))
	}
	for _, k := range KubeconfigTable() {
		p := filepath.Join(kubeconfigDir, k.File)
		paths = append(paths, p, p+".csr")
	}
	return paths
}

// GenerateCSRs writes a new key and a signing request for every
// certificate of CSRCerts into certDir, and for every kubeconfig file a
// partial kubeconfig holding a new key plus a request into kubeconfigDir
// (see PartialKubeconfig), for an external CA to sign. It refuses, before
// writing anything, when any of those files exists: it never overwrites a
// key. The keys are made in parallel on workers goroutines. Keys and
// requests are written 0600.
func GenerateCSRs(ctx context.Context, cfg *kubeadm.InitConfiguration, certDir, kubeconfigDir string, opts Options, workers int) error {
	for _, p := range CSRTargets(certDir, kubeconfigDir) {
		ok, err := exists(p)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("%s already exists; remove it (and what goes with it) to generate new keys and requests", p)
		}
	}
	certs := CSRCerts()
	kcs := KubeconfigTable()
	var names []string
	for _, c := range certs {
		names = append(names, c.Name)
	}
	for _, k := range kcs {
		names = append(names, k.File)
	}
	pool := NewKeyPool(ctx, opts.NewKey, cfg.KeyAlgorithm(), names, workers)
	w := opts.writer()

	errs := make([]error, len(certs)+len(kcs))
	var wg sync.WaitGroup
	for i, c := range certs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = func() error {
				spec, err := c.Spec(cfg)
				if err != nil {
					return err
				}
				key, err := pool.Generator(c.Name)(cfg.KeyAlgorithm())
				if err != nil {
					return fmt.Errorf("creating the key of %s: %w", KeyPath(certDir, c.BaseName), err)
				}
				csr, err := NewCSR(spec, key)
				if err != nil {
					return err
				}
				if err := writeKey(w, certDir, c.BaseName, key); err != nil {
					return err
				}
				return writeFile(w, CSRPath(certDir, c.BaseName), EncodeCSRPEM(csr), KeyMode)
			}()
		}()
	}
	for i, k := range kcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[len(certs)+i] = func() error {
				path := filepath.Join(kubeconfigDir, k.File)
				key, err := pool.Generator(k.File)(cfg.KeyAlgorithm())
				if err != nil {
					return fmt.Errorf("creating the key for %s: %w", path, err)
				}
				csr, err := NewCSR(k.Spec(cfg), key)
				if err != nil {
					return err
				}
				kc, err := PartialKubeconfig(cfg, k, key)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if err := writeFile(w, path, kc, KeyMode); err != nil {
					return err
				}
				return writeFile(w, path+".csr", EncodeCSRPEM(csr), KeyMode)
			}()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
