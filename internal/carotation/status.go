package carotation

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Status describes, one line per rotated CA, where a rotation stands on
// the node whose certificate folder is certDir and kubeconfig folder
// kubeconfigDir: which CA signs, whether the new one is trusted, and
// which CA signed each certificate of the CA on the node (the kubeconfig
// files' client certificates and the kubelet's among them). No rotation:
// nil. cfg says which CAs rotate (Rotated).
func Status(cfg *kubeadm.ClusterConfiguration, certDir, kubeconfigDir string) []string {
	if _, err := os.Stat(filepath.Join(certDir, Folder)); err != nil {
		return nil
	}
	var out []string
	for _, ca := range Rotated(cfg) {
		s, err := ReadCA(certDir, ca)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ca.Name, err))
			continue
		}
		if s.Next == nil {
			out = append(out, fmt.Sprintf("%s: no new CA made yet (phase prepare)", ca.Name))
			continue
		}
		signer := "the old CA signs"
		if s.Signer.Equal(s.Next) {
			signer = "the new CA signs"
		}
		trust := "the new CA is not trusted yet (phase trust)"
		if len(s.Trusted) > 1 && s.Trusted.Contains(s.Next) {
			trust = "both are trusted"
		} else if len(s.Trusted) == 1 && s.Trusted.Contains(s.Next) {
			trust = "the new CA alone is trusted"
		}
		var byNew, byOld []string
		for name, cert := range signedBy(certDir, kubeconfigDir, ca) {
			if cert.CheckSignatureFrom(s.Next) == nil {
				byNew = append(byNew, name)
			} else {
				byOld = append(byOld, name)
			}
		}
		out = append(out, fmt.Sprintf("%s: %s, %s; signed by the new CA: %s; by the old CA: %s", ca.Name, signer, trust, list(byNew), list(byOld)))
	}
	return out
}

// signedBy maps the certificates of the node that ca signs to their names.
func signedBy(certDir, kubeconfigDir string, ca pki.Cert) map[string]*x509.Certificate {
	out := map[string]*x509.Certificate{}
	for _, c := range pki.CertTable() {
		if c.CA != ca.Name {
			continue
		}
		if cert, err := pki.LoadCert(pki.CertPath(certDir, c.BaseName)); err == nil {
			out[c.Name] = cert
		}
	}
	if ca.Name != pki.CAName {
		return out
	}
	for _, k := range pki.KubeconfigTable() {
		path := filepath.Join(kubeconfigDir, k.File)
		if k.KubeletOwned {
			if cred, err := (&KubeletCert{KubeletConf: path}).read(); err == nil {
				out[k.File] = cred.cert
			}
			continue
		}
		if cert, err := pki.ReadKubeconfigClientCert(path); err == nil {
			out[k.File] = cert
		}
	}
	return out
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
