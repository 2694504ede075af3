package carotation

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Bundle is a list of CA certificates trusted together, in file order.
type Bundle []*x509.Certificate

// ParseBundle reads every certificate of PEM data; other blocks are
// skipped. No certificate at all is an error.
func ParseBundle(data []byte) (Bundle, error) {
	var out Bundle
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// ReadBundle reads the certificates of the file at path.
func ReadBundle(path string) (Bundle, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	b, err := ParseBundle(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// PEM encodes b, one block per certificate.
func (b Bundle) PEM() []byte {
	var out []byte
	for _, c := range b {
		out = append(out, pki.EncodeCertPEM(c)...)
	}
	return out
}

// Contains reports whether c is in b.
func (b Bundle) Contains(c *x509.Certificate) bool {
	for _, x := range b {
		if x.Equal(c) {
			return true
		}
	}
	return false
}

// Equal reports whether a and b hold the same certificates in the same
// order.
func (b Bundle) Equal(o Bundle) bool {
	if len(b) != len(o) {
		return false
	}
	for i := range b {
		if !b[i].Equal(o[i]) {
			return false
		}
	}
	return true
}

// bundleOf returns the certificates given, without repeats, in order.
func bundleOf(certs ...*x509.Certificate) Bundle {
	var out Bundle
	for _, c := range certs {
		if c != nil && !out.Contains(c) {
			out = append(out, c)
		}
	}
	return out
}

// writeBundle writes b to path (a certificate file, mode pki.CertMode
// unless the file has another) when it holds something else; it reports
// whether it wrote.
func writeBundle(path string, b Bundle, dryRun bool) (bool, error) {
	cur, err := ReadBundle(path)
	if err == nil && cur.Equal(b) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	return true, atomicfile.WriteLike(path, b.PEM(), path, pki.CertMode)
}

// kubeconfigCAs returns the CA certificates the kubeconfig file at path
// trusts for the cluster of its current context.
func kubeconfigCAs(path string) (Bundle, error) {
	_, cluster, err := loadKubeconfig(path)
	if err != nil {
		return nil, err
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return nil, fmt.Errorf("%s: its cluster embeds no CA certificate (certificate-authority-data)", path)
	}
	b, err := ParseBundle(cluster.CertificateAuthorityData)
	if err != nil {
		return nil, fmt.Errorf("%s: certificate-authority-data: %w", path, err)
	}
	return b, nil
}

// loadKubeconfig reads the kubeconfig file at path as it is (file
// references stay as written) and returns the cluster of its current
// context.
func loadKubeconfig(path string) (*clientcmdapi.Config, *clientcmdapi.Cluster, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the kubeconfig file %s: %w", path, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil, nil, fmt.Errorf("the kubeconfig file %s has no current context", path)
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil {
		return nil, nil, fmt.Errorf("the kubeconfig file %s has no cluster %q", path, ctx.Cluster)
	}
	return cfg, cluster, nil
}

// setKubeconfigCAs makes the kubeconfig file at path trust exactly b for
// the cluster of its current context, keeping the rest of the file; it
// reports whether it had to write.
func setKubeconfigCAs(path string, b Bundle, dryRun bool) (bool, error) {
	cfg, cluster, err := loadKubeconfig(path)
	if err != nil {
		return false, err
	}
	if cluster.CertificateAuthority != "" {
		return false, fmt.Errorf("%s: its cluster names a CA file (%s) instead of embedding the CA; make that file hold the trust bundle yourself", path, cluster.CertificateAuthority)
	}
	want := b.PEM()
	if bytes.Equal(cluster.CertificateAuthorityData, want) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	cluster.CertificateAuthorityData = want
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", path, err)
	}
	return true, atomicfile.WriteLike(path, data, path, pki.KeyMode)
}
