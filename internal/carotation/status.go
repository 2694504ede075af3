package carotation

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// Status describes, one line per rotated CA, where a rotation stands on
// the node whose certificate folder is certDir: which CA signs, whether
// the new one is trusted, and how many of the CA's certificates on the
// node the new one signed. No rotation: nil.
func Status(certDir string) []string {
	if _, err := os.Stat(filepath.Join(certDir, Folder)); err != nil {
		return nil
	}
	var out []string
	for _, ca := range Rotated() {
		s, err := ReadCA(certDir, ca)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ca.Name, err))
			continue
		}
		if s.Next == nil {
			out = append(out, fmt.Sprintf("%s: no new CA made yet (phase prepare)", ca.Name))
			continue
		}
		signer := "the current CA signs"
		if s.Signer.Equal(s.Next) {
			signer = "the new CA signs"
		}
		trust := "the new CA is not trusted yet (phase trust)"
		if len(s.Trusted) > 1 && s.Trusted.Contains(s.Next) {
			trust = "both are trusted"
		}
		total, byNew := 0, 0
		for _, c := range pki.CertTable() {
			if c.CA != ca.Name {
				continue
			}
			cert, err := pki.LoadCert(pki.CertPath(certDir, c.BaseName))
			if err != nil {
				continue
			}
			total++
			if cert.CheckSignatureFrom(s.Next) == nil {
				byNew++
			}
		}
		out = append(out, fmt.Sprintf("%s: %s, %s; %d of its %d certificates here are signed by the new CA", ca.Name, signer, trust, byNew, total))
	}
	return out
}
