package bootstraptoken

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"strings"
)

// CACertHash returns the value a joining node checks the cluster CA with
// (--discovery-token-ca-cert-hash): "sha256:" and the hex SHA-256 of the
// certificate's DER-encoded SubjectPublicKeyInfo.
func CACertHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CACertHashes returns CACertHash of every certificate in a PEM bundle, in
// order. Blocks that are not certificates are passed over; a bundle without
// any certificate is an error.
func CACertHashes(pemData []byte) ([]string, error) {
	var hashes []string
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing a CA certificate: %w", err)
		}
		hashes = append(hashes, CACertHash(cert))
	}
	if len(hashes) == 0 {
		return nil, fmt.Errorf("no PEM certificate found in the CA data")
	}
	return hashes, nil
}

// JoinCommand returns the "kubeadm join" command line for token, for the
// cluster of the kubeconfig file's current context: its API server's
// host:port, the token, one --discovery-token-ca-cert-hash per CA
// certificate and, when certificateKey is not empty, the flags that join a
// control-plane node. The line is upstream's byte for byte, including the
// space it ends with when there is no certificate key.
func JoinCommand(kubeconfigPath, token, certificateKey string) (string, error) {
	cluster, err := CurrentCluster(kubeconfigPath)
	if err != nil {
		return "", err
	}
	hashes, err := CACertHashes(cluster.CertificateAuthorityData)
	if err != nil {
		return "", fmt.Errorf("the kubeconfig file %s: %w", kubeconfigPath, err)
	}
	endpoint, err := hostPort(cluster.Server)
	if err != nil {
		return "", fmt.Errorf("the kubeconfig file %s: %w", kubeconfigPath, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kubeadm join %s --token %s ", endpoint, token)
	for _, h := range hashes {
		fmt.Fprintf(&b, "--discovery-token-ca-cert-hash %s ", h)
	}
	if certificateKey != "" {
		fmt.Fprintf(&b, "--control-plane --certificate-key %s", certificateKey)
	}
	return b.String(), nil
}

// hostPort returns the host:port part of an API server URL.
func hostPort(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the API server address %q is not a URL", server)
	}
	return u.Host, nil
}
