package carotation

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Status describes, one line per rotated CA, where a rotation stands on
// the node whose certificate folder is certDir and kubeconfig folder
// kubeconfigDir: which CA signs, whether the new one is trusted, and
// which CA signed each certificate of the CA on the node (the kubeconfig
// files' client certificates and the kubelet's among them); a last line
// for the service-account key. No rotation: nil. cfg says which CAs rotate (Rotated).
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
	return append(out, saStatus(Layout{CertDir: certDir}))
}

// saStatus describes where the rotation of the service-account key
// stands.
func saStatus(l Layout) string {
	s, err := ReadSA(l.CertDir)
	switch {
	case err != nil:
		return "sa: " + err.Error()
	case s.Next == nil:
		return "sa: no new key made yet (phase prepare)"
	case !s.accepts(s.Next):
		return "sa: the old key signs, the new key is not accepted yet (phase trust)"
	case !s.nextSigns():
		return "sa: the old key signs, both are accepted"
	case len(s.Accepted) == 1:
		return "sa: the new key signs, it alone is accepted"
	}
	at, ok, err := l.SASignedAt()
	if err != nil || !ok {
		return "sa: the new key signs, both are accepted"
	}
	return fmt.Sprintf("sa: the new key signs since %s, both are accepted; finish drops the old one from %s",
		at.UTC().Format(time.RFC3339), at.Add(ServiceAccountKeyGrace).UTC().Format(time.RFC3339))
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
	if cert, err := pki.ReadKubeconfigClientCert(cis.ApproverKubeconfig(kubeconfigDir)); err == nil {
		out[cis.ApproverKubeconfigFile] = cert
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
