package carotation

import (
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// readAll reads every rotated CA (the cluster CA first); each must have
// its new CA made.
func (p *ControlPlane) readAll() ([]*CAState, error) {
	states, err := p.readRotated()
	if err != nil {
		return nil, err
	}
	for _, s := range states {
		if s.Next == nil {
			return nil, fmt.Errorf("no new %s in %s: run the prepare and trust phases first", s.CA.Description, p.Dir())
		}
	}
	return states, nil
}

// nextOf maps the name of each CA of states to its new CA.
func nextOf(states []*CAState) map[string]*x509.Certificate {
	next := map[string]*x509.Certificate{}
	for _, s := range states {
		next[s.CA.Name] = s.Next
	}
	return next
}

// leafCert reads the certificate named info.Name: a certificate file or
// the client certificate of a kubeconfig file; nil for one neither table
// knows.
func (p *ControlPlane) leafCert(name string) (*x509.Certificate, error) {
	if pki.IsKubeconfig(name) {
		return pki.ReadKubeconfigClientCert(pki.KubeconfigPath(p.KubernetesDir, name))
	}
	if c, ok := pki.LookupCert(name); ok {
		return pki.LoadCert(pki.CertPath(p.CertDir, c.BaseName))
	}
	return nil, nil
}

// notSignedBy returns the Renewer's choice of certificates for the sign
// step: those of a rotated CA that its new CA (next, by CA name) has not
// signed.
func (p *ControlPlane) notSignedBy(next map[string]*x509.Certificate) func(pki.ExpirationInfo) (bool, error) {
	return func(info pki.ExpirationInfo) (bool, error) {
		n := next[info.CAName]
		if n == nil || info.Missing {
			return false, nil
		}
		c, err := p.leafCert(info.Name)
		if err != nil || c == nil {
			return false, err
		}
		return c.CheckSignatureFrom(n) != nil, nil
	}
}

// leftToSign lists the certificates and kubeconfig files of this node
// that a rotated CA's new CA has not signed yet.
func (p *ControlPlane) leftToSign(next map[string]*x509.Certificate) ([]string, error) {
	certs, _, err := pki.CheckExpiration(p.Cfg, p.CertDir, p.KubernetesDir)
	if err != nil {
		return nil, err
	}
	due := p.notSignedBy(next)
	var out []string
	for _, c := range certs {
		d, err := due(c)
		if err != nil {
			return nil, err
		}
		if d {
			out = append(out, c.Name)
		}
	}
	return out, nil
}

// Sign makes the new CAs sign on this control-plane node (phase sign):
//
//  1. ca.key, front-proxy-ca.key and etcd/ca.key become the new keys,
//     and their certificate files list the new CA first (the current one
//     stays trusted after it; no component reads them again for this);
//     the controller manager's copy of its signing CA becomes the new CA,
//     which it reads again by itself;
//     sa.key becomes the new service-account key and sa.pub lists it
//     first (the current one stays accepted after it), and the API server
//     and the controller manager restart to sign with it; the time is
//     recorded in Folder/sa-signed;
//  2. every certificate and kubeconfig client certificate of this node
//     that a rotated CA signed is re-issued by its new CA (etcd's and the
//     API server's etcd client certificate among them, which etcd and the
//     API server read again by themselves), and the components made to
//     use them one at a time, by the automatic
//     renewal's code (decision 008): its restarts, health waits and
//     roll-back, and its record of the restarts owed;
//  3. the kubelet gets a client certificate of the new CA (KubeletCert)
//     and restarts, and its Node records it;
//  4. once every control-plane Node records it, cluster-info lists the
//     new cluster CA first: the CA that signs, for the workers.
//
// The trust step must have run. Run again, it changes nothing.
func (p *ControlPlane) Sign(ctx context.Context) error {
	states, err := p.readAll()
	if err == nil {
		err = p.trusted(states)
	}
	if err != nil && p.DryRun {
		fmt.Fprintf(p.Out, "[rotate-ca] Would make the new CAs sign, once this is done: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	cluster := states[0]
	if !p.DryRun && !cluster.Signer.Equal(cluster.Next) {
		if err := checkNodes(ctx, p.Client, TrustedAnnotation, bootstraptoken.CACertHash(cluster.Next), "trust"); err != nil {
			return err
		}
	}
	return p.sign(ctx, states)
}

// trusted checks that the trust step made this node trust the new CAs.
func (p *ControlPlane) trusted(states []*CAState) error {
	cluster := states[0]
	for _, s := range states {
		if !s.Trusted.Contains(s.Next) {
			return fmt.Errorf("%s does not trust the new %s yet: run the trust phase first", pki.CertPath(p.CertDir, s.CA.BaseName), s.CA.Description)
		}
	}
	for _, k := range p.kubeconfigs() {
		cur, err := kubeconfigCAs(k.path)
		if err != nil {
			return err
		}
		if !cur.Contains(cluster.Next) {
			return fmt.Errorf("%s does not trust the new cluster CA yet: run the trust phase first", k.path)
		}
	}
	sa, err := ReadSA(p.CertDir)
	if err != nil {
		return err
	}
	if sa.Next == nil {
		return fmt.Errorf("no new service-account key (%s): run the prepare and trust phases first", sa.NextPath)
	}
	if !sa.accepts(sa.Next) {
		return fmt.Errorf("%s does not list the new service-account key yet: run the trust phase first", sa.PubPath)
	}
	return nil
}

func (p *ControlPlane) sign(ctx context.Context, states []*CAState) error {
	cluster := states[0]
	var changes []change
	for _, s := range states {
		keyPath, crtPath := pki.KeyPath(p.CertDir, s.CA.BaseName), pki.CertPath(p.CertDir, s.CA.BaseName)
		nextKey := pki.KeyPath(p.CertDir, nextBase(s.CA))
		want := bundleOf(append(Bundle{s.Next}, s.Trusted...)...)
		// The key first: a run killed between the two leaves a key whose
		// certificate is in the bundle, which ReadCA accepts.
		changes = append(changes,
			change{keyPath, "the key of the new " + s.CA.Description, nil, false, func(dry bool) (bool, error) {
				return copyFile(nextKey, keyPath, nil, dry)
			}},
			change{crtPath, "the new " + s.CA.Description + " first", nil, false, func(dry bool) (bool, error) {
				return writeBundle(crtPath, want, dry)
			}})
	}
	sCrt, sKey := filepath.Join(p.CertDir, signerCert), filepath.Join(p.CertDir, signerKey)
	changes = append(changes,
		change{sKey, "the controller manager's signing key: the new one", nil, false, func(dry bool) (bool, error) {
			return copyFile(pki.KeyPath(p.CertDir, nextBase(cluster.CA)), sKey, nil, dry)
		}},
		change{sCrt, "the controller manager's signing CA: the new one", nil, false, func(dry bool) (bool, error) {
			return copyFile(pki.CertPath(p.CertDir, nextBase(cluster.CA)), sCrt, Bundle{cluster.Next}.PEM(), dry)
		}})
	// The service-account key: sa.key the new key, sa.pub listing it
	// first (the key first, as for the CAs: a run killed between the two
	// leaves sa.pub listing the new key, which the next run reorders).
	// The API server reads both only at start, the controller manager
	// sa.key.
	sa, err := ReadSA(p.CertDir)
	if err != nil {
		return err
	}
	accepted := keysOf(append([]crypto.PublicKey{sa.Next.Public()}, sa.Accepted...)...)
	changes = append(changes,
		change{sa.KeyPath, "the service-account signing key: the new one", []string{APIServer, ControllerManager}, false, sa.useNextKey},
		change{sa.PubPath, "the service-account public keys: the new one first", []string{APIServer}, false, func(dry bool) (bool, error) {
			return sa.writePublicKeys(accepted, dry)
		}})
	next := nextOf(states)
	return p.apply(ctx, changes, func(ctx context.Context) error {
		if p.DryRun {
			fmt.Fprintf(p.Out, "[rotate-ca] Would record in %s when the API server began to sign service-account tokens with the new key\n", p.saSignedPath())
		} else if err := p.recordSASigned(now(p.KeyOptions), p.Out); err != nil {
			// After the restarts: the record is never earlier than the
			// first token of the new key.
			return err
		} else if err := p.recordSASignedOnNode(ctx); err != nil {
			return err
		}
		if p.DryRun {
			left, err := p.leftToSign(next)
			if err != nil {
				return err
			}
			fmt.Fprintf(p.Out, "[rotate-ca] Would list the new cluster CA first in the cluster-info ConfigMap once every control-plane node signs with it\n")
			for _, name := range left {
				fmt.Fprintf(p.Out, "[rotate-ca] Would re-issue %s with the new CA and have %s use it\n", name, orNobody(certrenewal.ReadBy(name)))
			}
			return p.kubelet().Renew(ctx, cluster.Next)
		}
		r := &certrenewal.Renewer{
			Cfg:           p.Cfg,
			CertDir:       p.CertDir,
			KubeconfigDir: p.KubernetesDir,
			BackupDir:     filepath.Join(p.Dir(), "sign-backup"),
			StatusPath:    filepath.Join(p.Dir(), "sign-status.json"),
			Now:           p.KeyOptions.Now,
			NewKey:        p.KeyOptions.NewKey,
			Node:          p.Renewal,
			Out:           p.Out,
			Due:           p.notSignedBy(next),
			DueWhat:       "left that the previous CA signed",
		}
		if _, err := r.Run(ctx); err != nil {
			return err
		}
		if err := p.kubelet().Renew(ctx, cluster.Next); err != nil {
			return err
		}
		return p.listSignerFirst(ctx, cluster.Next)
	})
}

// listSignerFirst lists next first in cluster-info once every
// control-plane node signs with it: the workers' sign step reads there
// that any controller manager, the leading one among them, signs their
// kubelets' requests with the new CA (a kubelet may read only its own
// Node, not the control-plane nodes' records).
func (p *ControlPlane) listSignerFirst(ctx context.Context, next *x509.Certificate) error {
	lagging, err := p.lagging(ctx, KubeletClientCAAnnotation, is(caHash(next)))
	if err != nil {
		return err
	}
	if len(lagging) > 0 {
		fmt.Fprintf(p.Out, "[rotate-ca] The cluster-info ConfigMap lists the new cluster CA first once the control-plane nodes %v sign with it too: run this phase there\n", lagging)
		return nil
	}
	changed, err := updateClusterInfo(ctx, p.Client, func(cur Bundle) Bundle {
		return bundleOf(append(Bundle{next}, cur...)...)
	})
	if changed {
		fmt.Fprintf(p.Out, "[rotate-ca] The cluster-info ConfigMap lists the new cluster CA first: the workers' sign phase may run\n")
	}
	return err
}

// recordSASignedOnNode copies the record of when the new service-account
// key began to sign here to this node's Node, where the finish step of
// every control-plane node reads the latest.
func (p *ControlPlane) recordSASignedOnNode(ctx context.Context) error {
	at, ok, err := p.SASignedAt()
	if err != nil || !ok {
		return err
	}
	k := p.kubelet()
	cred, err := k.read()
	if err != nil {
		return err
	}
	return k.annotate(ctx, cred.cert.Subject.CommonName, SASignedAnnotation, at.UTC().Format(time.RFC3339))
}
