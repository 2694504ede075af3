package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
)

// ExpirationInfo describes one certificate for "certs check-expiration".
type ExpirationInfo struct {
	// Name is the certificate's name (see Cert.Name) or the kubeconfig's
	// file name.
	Name string
	// CAName is the Name of the signing CA; empty for a CA.
	CAName string
	// Missing: the file does not exist (the other fields are then empty).
	Missing  bool
	NotAfter time.Time
	// ExternallyManaged: the (signing) CA's key is not on this node.
	ExternallyManaged bool
}

// CheckExpiration reads the certificates cfg uses from certDir and the
// client certificates embedded in the kubeconfig files in kubeconfigDir
// (kubelet.conf aside: the kubelet rotates its own), and returns them and
// the CAs, each list sorted by name. A missing file is reported as
// Missing, a CA certificate as any other (a node that is no control-plane
// node has none of them), as upstream kubeadm reports them. For a CA whose
// key is absent (external CA mode), a missing or foreign certificate that
// CA should have signed is an error. It only reads.
func CheckExpiration(cfg *kubeadm.ClusterConfiguration, certDir, kubeconfigDir string) (certs, cas []ExpirationInfo, err error) {
	table := Certificates(cfg)
	external := map[string]bool{}
	for _, c := range table {
		if !c.IsCA() {
			continue
		}
		ca, key, err := LoadCA(certDir, c)
		switch {
		case errors.Is(err, fs.ErrNotExist) && ca == nil:
			cas = append(cas, ExpirationInfo{Name: c.Name, Missing: true})
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("checking the %s CA: %w", c.Name, err)
		}
		if key == nil {
			external[c.Name] = true
			if err := checkExternalCA(table, certDir, c, ca); err != nil {
				return nil, nil, err
			}
		}
		cas = append(cas, ExpirationInfo{Name: c.Name, NotAfter: ca.NotAfter, ExternallyManaged: key == nil})
	}
	for _, c := range table {
		if c.IsCA() {
			continue
		}
		info := ExpirationInfo{Name: c.Name}
		cert, err := LoadCert(CertPath(certDir, c.BaseName))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			info.Missing = true
		case err != nil:
			return nil, nil, err
		default:
			info.CAName, info.NotAfter, info.ExternallyManaged = c.CA, cert.NotAfter, external[c.CA]
		}
		certs = append(certs, info)
	}
	for _, k := range KubeconfigTable() {
		if k.KubeletOwned {
			continue
		}
		info := ExpirationInfo{Name: k.File}
		cert, err := ReadKubeconfigClientCert(filepath.Join(kubeconfigDir, k.File))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			info.Missing = true
		case err != nil:
			return nil, nil, err
		default:
			info.CAName, info.NotAfter, info.ExternallyManaged = CAName, cert.NotAfter, external[CAName]
		}
		certs = append(certs, info)
	}
	// The CISHardening profile's approver has a kubeconfig file of its own
	// on control-plane nodes; listed when it is there.
	if cis.Enabled(cfg.FeatureGates) {
		cert, err := ReadKubeconfigClientCert(cis.ApproverKubeconfig(kubeconfigDir))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, nil, err
		default:
			certs = append(certs, ExpirationInfo{Name: cis.ApproverKubeconfigFile, CAName: CAName, NotAfter: cert.NotAfter, ExternallyManaged: external[CAName]})
		}
	}
	byName := func(l []ExpirationInfo) {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	byName(certs)
	byName(cas)
	return certs, cas, nil
}

// checkExternalCA checks that every certificate of table signed by the
// keyless CA c is present and signed by it.
func checkExternalCA(table []Cert, certDir string, c Cert, ca *x509.Certificate) error {
	for _, leaf := range table {
		if leaf.CA != c.Name {
			continue
		}
		path := CertPath(certDir, leaf.BaseName)
		cert, err := LoadCert(path)
		if err != nil {
			return fmt.Errorf("the %s CA has no key (external CA), so its certificates must be present: %w", c.Name, err)
		}
		if err := cert.CheckSignatureFrom(ca); err != nil {
			return fmt.Errorf("the %s CA has no key (external CA), and %s is not signed by it: %w", c.Name, path, err)
		}
	}
	return nil
}
