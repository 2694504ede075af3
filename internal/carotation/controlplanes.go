package carotation

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// With several control-plane nodes each one runs every step on its own
// files, and what the cluster publishes (the kube-root-ca.crt ConfigMaps
// of the leading controller manager, extension-apiserver-authentication,
// which every API server merges its CA files into) follows only once
// every one did. The Nodes' annotations say which did:
//
//   - trust: a control-plane node whose TrustedAnnotation lacks the new CA
//     has not trusted it yet; until every other one has, trust neither
//     waits for the publication nor restarts kube-proxy and the DNS;
//   - sign: a control-plane node's KubeletClientCAAnnotation names the new
//     CA once its sign step ended, so its controller manager signs with
//     the new CA: a worker's sign waits for all of them;
//   - finish: a control-plane node whose TrustedAnnotation names the new
//     CA alone has finished; the last one to finish drops the old CAs
//     from what the cluster publishes and removes the annotations.

// SASignedAnnotation: when the new service-account key began to sign on
// a control-plane node (RFC 3339), set by its sign step. Finish waits
// ServiceAccountKeyGrace after the latest of them: until a node's sign,
// its API server signed tokens with the old key.
const SASignedAnnotation = "kubeadm.kubernetes.io/rotate-ca-sa-signed"

// laggingControlPlanes returns, sorted, the control-plane Nodes (those
// with noderole.ControlPlaneLabel) but self whose annotation key done
// does not accept.
func laggingControlPlanes(ctx context.Context, c kubernetes.Interface, self, key string, done func(value string) bool) ([]string, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: noderole.ControlPlaneLabel})
	if err != nil {
		return nil, fmt.Errorf("listing the control-plane Nodes: %w", err)
	}
	var out []string
	for _, n := range nodes.Items {
		if n.Name == self {
			continue
		}
		if v, ok := n.Annotations[key]; !ok || !done(v) {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// trusts is done for TrustedAnnotation: the CAs listed include hash.
func trusts(hash string) func(string) bool {
	return func(v string) bool { return slices.Contains(strings.Split(v, ","), hash) }
}

// trustsOnly is done for TrustedAnnotation after finish: hash alone.
func trustsOnly(hash string) func(string) bool {
	return func(v string) bool { return v == hash }
}

// is is done for an annotation naming one value.
func is(want string) func(string) bool {
	return func(v string) bool { return v == want }
}

// nodeName is the name of this node, from its kubelet's client
// certificate (system:node:<name>).
func (k *KubeletCert) nodeName() (string, error) {
	cred, err := k.read()
	if err != nil {
		return "", err
	}
	name, ok := strings.CutPrefix(cred.cert.Subject.CommonName, "system:node:")
	if !ok {
		return "", fmt.Errorf("the kubelet's client certificate is for %q, not a node", cred.cert.Subject.CommonName)
	}
	return name, nil
}

// lagging returns the other control-plane Nodes whose annotation key done
// does not accept; none in a dry run (no cluster reached).
func (p *ControlPlane) lagging(ctx context.Context, key string, done func(string) bool) ([]string, error) {
	if p.DryRun || p.Client == nil {
		return nil, nil
	}
	self, err := p.Kubelet.nodeName()
	if err != nil {
		return nil, err
	}
	return laggingControlPlanes(ctx, p.Client, self, key, done)
}

// latestSASigned is the latest time a control-plane Node records for the
// new service-account key's first signature, if any is later than at.
func latestSASigned(ctx context.Context, c kubernetes.Interface, at time.Time) (time.Time, error) {
	if c == nil {
		return at, nil
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: noderole.ControlPlaneLabel})
	if err != nil {
		return at, fmt.Errorf("listing the control-plane Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		v, ok := n.Annotations[SASignedAnnotation]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return at, fmt.Errorf("the Node %s: annotation %s: %w", n.Name, SASignedAnnotation, err)
		}
		if t.After(at) {
			at = t
		}
	}
	return at, nil
}

// CheckNoRotation fails when the cluster shows a rotation another node
// began: cluster-info lists more than one CA, a Node records a step, or
// the new CAs are stored in SecretName.
// The prepare phase of another control-plane node must not make other
// new CAs then: the folder of the node that made them is to be copied.
func CheckNoRotation(ctx context.Context, c kubernetes.Interface) error {
	var listed Bundle
	if _, err := updateClusterInfo(ctx, c, func(cur Bundle) Bundle { listed = cur; return cur }); err != nil {
		return err
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the Nodes: %w", err)
	}
	var marked []string
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[TrustedAnnotation]; ok {
			marked = append(marked, n.Name)
		}
	}
	uploaded, err := shared(ctx, c)
	if err != nil {
		return err
	}
	if len(listed) < 2 && len(marked) == 0 && !uploaded {
		return nil
	}
	return fmt.Errorf("a CA rotation is under way in the cluster (cluster-info lists %d CAs; Nodes recording a step: %v; Secret %s/%s stored: %v) and this node has no new CAs: download them with --certificate-key, or copy the folder %s of the certificate folder from the control-plane node whose prepare phase made them, instead of making others", len(listed), marked, metav1.NamespaceSystem, SecretName, uploaded, Folder)
}

// Staged reports whether every new CA and the new service-account key of
// a rotation of cfg's cluster are in the certificate folder.
func Staged(cfg *kubeadm.ClusterConfiguration, certDir string) (bool, error) {
	for _, ca := range Rotated(cfg) {
		s, err := ReadCA(certDir, ca)
		if err != nil {
			return false, err
		}
		if s.Next == nil {
			return false, nil
		}
	}
	sa, err := ReadSA(certDir)
	if err != nil {
		return false, err
	}
	return sa.Next != nil, nil
}

// localIssuer signs the kubelet's client CSRs of a control-plane node
// with the cluster CA that signs on this node (the new one, after sign's
// swap), as init and a control-plane join sign kubelet.conf's: the
// controller managers of the other control-plane nodes, one of which may
// lead, sign with the old CA until their own sign step.
func (p *ControlPlane) localIssuer() func(ctx context.Context, r Request) ([]byte, error) {
	return func(_ context.Context, r Request) ([]byte, error) {
		s, err := ReadCA(p.CertDir, Rotated(p.Cfg)[0])
		if err != nil {
			return nil, err
		}
		block, _ := pem.Decode(r.CSR)
		if block == nil {
			return nil, errors.New("the kubelet's CSR is not PEM")
		}
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return nil, err
		}
		spec := pki.CertSpec{
			CommonName:   csr.Subject.CommonName,
			Organization: csr.Subject.Organization,
			Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			Validity:     pki.CertificateValidity(p.Cfg),
		}
		if r.Serving {
			spec.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			spec.DNSNames, spec.IPs = csr.DNSNames, csr.IPAddresses
		}
		cert, err := pki.NewSignedCert(spec, csr.PublicKey, s.Signer, s.Key, now(p.KeyOptions))
		if err != nil {
			return nil, err
		}
		return pki.EncodeCertPEM(cert), nil
	}
}

// caHash is the CA's hash as the annotations name it.
func caHash(c *x509.Certificate) string { return bootstraptoken.CACertHash(c) }
