package carotation

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	csrutil "k8s.io/client-go/util/certificate/csr"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// The Nodes' records of a rotation, written by each node's kubelet
// credential (a kubelet may change its own Node) and removed by the
// control plane's finish step. CAs are named by their hash
// (sha256:<hex of the public key info>, as join's CA pins).
const (
	// TrustedAnnotation: the CAs the kubelet trusts, comma-separated;
	// set by the trust step. The control plane's sign step refuses while
	// a Node's lacks the new CA: its kubelet could not reach an API
	// server serving a certificate of the new CA.
	TrustedAnnotation = "kubeadm.kubernetes.io/rotate-ca-trusted"
	// KubeletClientCAAnnotation: the CA of the kubelet's client
	// certificate; set by the sign step. The finish step refuses while a
	// Node's is not the new CA.
	KubeletClientCAAnnotation = "kubeadm.kubernetes.io/rotate-ca-kubelet-client"
)

// The signers of the kubelets' client and serving certificates, which the
// controller manager signs with its cluster signing CA.
const (
	kubeletClientSigner  = certificatesv1.KubeAPIServerClientKubeletSignerName
	kubeletServingSigner = certificatesv1.KubeletServingSignerName
)

// The kubelet's rotated pairs (a "-current.pem" link to a dated file of
// certificate and key) in its certificate folder: the client one, which
// kubelet.conf names, and the serving one, there when the kubelet asks
// the cluster CA for its serving certificate (serverTLSBootstrap).
const (
	kubeletClientPair  = "kubelet-client-current.pem"
	kubeletServingPair = "kubelet-server-current.pem"
)

// Request is a certificate the kubelet's credential asks for: a CSR in
// PEM form, its key, and whether it is the kubelet's serving certificate
// (server auth, the CSR's names) rather than its client certificate.
type Request struct {
	CSR     []byte
	Key     crypto.Signer
	Serving bool
}

// KubeletCert gives the kubelet of this node a client certificate of the
// CA that signs now, as the kubelet's own rotation would: a CSR made with
// its current credential, which the controller manager approves (a node
// renewing its own certificate) and signs. A serving certificate the
// kubelet had from the cluster CA (serverTLSBootstrap) is asked for again
// the same way; whoever approves the kubelets' serving requests approves
// it (kubeadm's CIS profile runs an approver; upstream none).
type KubeletCert struct {
	// KubeletConf is the kubelet's kubeconfig (/etc/kubernetes/kubelet.conf);
	// its user names the certificate: the kubelet's rotated pair
	// (kubelet-client-current.pem, a link), another file, or embedded data.
	KubeletConf string
	// StateDir holds the restarts still owed (the rotation's folder).
	StateDir string
	// Client reaches the API server as this node's kubelet (nil: through
	// KubeletConf).
	Client func(ctx context.Context) (kubernetes.Interface, error)
	// Issue has the request signed and returns the certificate in PEM
	// form (nil: through the certificates API, with Client).
	Issue func(ctx context.Context, r Request) ([]byte, error)
	// IssuedHere: Issue signs with the CA key of this node, not through
	// the cluster (for what the step prints).
	IssuedHere     bool
	RestartKubelet func(ctx context.Context) error
	// NewKey makes the new key (nil: pki.NewPrivateKey); Now dates the
	// new file of the kubelet's rotated pair (nil: time.Now).
	NewKey  pki.KeyGenerator
	Now     func() time.Time
	Timeout time.Duration
	DryRun  bool
	Out     io.Writer
}

// kubeletCred is where one of the kubelet's certificates lies: its client
// credential or its serving pair.
type kubeletCred struct {
	cert     *x509.Certificate
	embedded bool
	// serving: the kubelet's serving pair, not its client credential.
	serving             bool
	certFile, keyFile   string
	cfgPath, authInfoNm string
}

func (k *KubeletCert) read() (*kubeletCred, error) {
	cfg, _, err := loadKubeconfig(k.KubeletConf)
	if err != nil {
		return nil, err
	}
	name := cfg.Contexts[cfg.CurrentContext].AuthInfo
	ai := cfg.AuthInfos[name]
	if ai == nil {
		return nil, fmt.Errorf("%s: no user %q", k.KubeletConf, name)
	}
	c := &kubeletCred{cfgPath: k.KubeletConf, authInfoNm: name}
	data := ai.ClientCertificateData
	if len(data) > 0 {
		c.embedded = true
	} else if ai.ClientCertificate != "" {
		c.certFile, c.keyFile = abs(k.KubeletConf, ai.ClientCertificate), abs(k.KubeletConf, ai.ClientKey)
		if data, err = boundedread.ReadFile(c.certFile, boundedread.MaxFile); err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("%s: the user %q has no client certificate", k.KubeletConf, name)
	}
	b, err := ParseBundle(data)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's client certificate (%s): %w", k.KubeletConf, err)
	}
	c.cert = b[0]
	return c, nil
}

func abs(kubeconfig, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(kubeconfig), p)
}

// Renew makes the kubelet's client certificate, and its serving
// certificate when the cluster issued it, ones signed by signing (the CA
// that signs now) and records it on the Node: when they already are, only
// a restart a killed run owed and the Node's record are made. A
// certificate the cluster issues that signing did not sign (the
// controller manager has not read its new signing CA yet) is asked for
// again until Timeout.
func (k *KubeletCert) Renew(ctx context.Context, signing *x509.Certificate) error {
	cred, err := k.read()
	if err != nil {
		return err
	}
	serving, err := k.readServing(cred)
	if err != nil {
		return err
	}
	pending := pendingPath(k.StateDir)
	need, err := pending.read()
	if err != nil {
		return err
	}
	var todo []*kubeletCred
	for _, c := range []*kubeletCred{cred, serving} {
		if c != nil && c.cert.CheckSignatureFrom(signing) != nil {
			todo = append(todo, c)
		}
	}
	if k.DryRun {
		for _, c := range todo {
			fmt.Fprintf(k.Out, "[rotate-ca] Would %s a kubelet %s certificate of the new CA (%s), write it where %s is and restart the kubelet\n", k.issuing("issue", "ask the cluster for"), c.kind(), c.cert.Subject.CommonName, c.where())
		}
		if len(todo) == 0 && len(need) > 0 {
			fmt.Fprintf(k.Out, "[rotate-ca] Would restart the kubelet\n")
		}
		return nil
	}
	for _, c := range todo {
		certPEM, key, err := k.request(ctx, c, signing)
		if err != nil {
			return err
		}
		if !slices.Contains(need, Kubelet) {
			if err := pending.write(append(need, Kubelet)); err != nil {
				return fmt.Errorf("recording the restarts to make: %w", err)
			}
			need = append(need, Kubelet)
		}
		where, err := k.install(c, certPEM, key)
		if err != nil {
			return err
		}
		fmt.Fprintf(k.Out, "[rotate-ca] Wrote the kubelet's %s certificate of the new CA to %s\n", c.kind(), where)
	}
	if len(todo) == 0 && len(need) == 0 {
		fmt.Fprintf(k.Out, "[rotate-ca] The kubelet's certificates are already of the CA that signs now (%s)\n", bootstraptoken.CACertHash(signing))
	}
	if len(need) > 0 {
		fmt.Fprintf(k.Out, "[rotate-ca] Restarting the kubelet\n")
		if err := k.RestartKubelet(ctx); err != nil {
			return fmt.Errorf("the kubelet did not come back: %w (run the phase again once it is healthy)", err)
		}
		if err := pending.write(nil); err != nil {
			return err
		}
	}
	return k.annotate(ctx, cred.cert.Subject.CommonName, KubeletClientCAAnnotation, bootstraptoken.CACertHash(signing))
}

// readServing is the kubelet's serving pair the cluster issued, beside its
// rotated client pair; nil when it has none (by default the kubelet signs
// its own serving certificate, which no CA rotation touches).
func (k *KubeletCert) readServing(client *kubeletCred) (*kubeletCred, error) {
	if client.embedded || filepath.Base(client.certFile) != kubeletClientPair {
		return nil, nil
	}
	path := filepath.Join(filepath.Dir(client.certFile), kubeletServingPair)
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b, err := ParseBundle(data)
	if err != nil {
		return nil, fmt.Errorf("the kubelet's serving certificate (%s): %w", path, err)
	}
	return &kubeletCred{cert: b[0], serving: true, certFile: path, keyFile: path}, nil
}

// kind names the credential's certificate: "client" or "serving".
func (c *kubeletCred) kind() string {
	if c.serving {
		return "serving"
	}
	return "client"
}

// where names the file or kubeconfig the credential lies in.
func (c *kubeletCred) where() string {
	if c.embedded {
		return c.cfgPath
	}
	return c.certFile
}

// RecordTrust records on this node's Node that its kubelet trusts cas.
func (k *KubeletCert) RecordTrust(ctx context.Context, cas Bundle) error {
	if k.DryRun {
		return nil
	}
	cred, err := k.read()
	if err != nil {
		return err
	}
	var hashes []string
	for _, c := range cas {
		hashes = append(hashes, bootstraptoken.CACertHash(c))
	}
	return k.annotate(ctx, cred.cert.Subject.CommonName, TrustedAnnotation, strings.Join(hashes, ","))
}

// request has a certificate like cred's (a serving one for the serving
// pair), with a new key of its algorithm, issued by signing.
func (k *KubeletCert) request(ctx context.Context, cred *kubeletCred, signing *x509.Certificate) ([]byte, crypto.Signer, error) {
	cur, serving, what := cred.cert, cred.serving, cred.kind()
	alg, ok := pki.KeyAlgorithmOf(cur.PublicKey)
	if !ok {
		return nil, nil, fmt.Errorf("the kubelet's %s certificate has a key of a kind kubeadm does not make", what)
	}
	newKey := k.NewKey
	if newKey == nil {
		newKey = pki.NewPrivateKey
	}
	key, err := newKey(alg)
	if err != nil {
		return nil, nil, err
	}
	spec := pki.CertSpec{CommonName: cur.Subject.CommonName, Organization: cur.Subject.Organization}
	if serving {
		spec.DNSNames, spec.IPs = cur.DNSNames, cur.IPAddresses
	}
	csr, err := pki.NewCSR(spec, key)
	if err != nil {
		return nil, nil, err
	}
	issue := k.Issue
	if issue == nil {
		issue = k.issueThroughAPI
	}
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	fmt.Fprintf(k.Out, "[rotate-ca] %s a kubelet %s certificate of the new CA (%s)\n", k.issuing("Issuing, with this node's key of the new CA,", "Asking the cluster for"), what, cur.Subject.CommonName)
	for {
		certPEM, err := issue(ctx, Request{CSR: pki.EncodeCSRPEM(csr), Key: key, Serving: serving})
		if err != nil {
			return nil, nil, fmt.Errorf("asking for the kubelet's %s certificate: %w", what, err)
		}
		b, err := ParseBundle(certPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("the issued kubelet %s certificate: %w", what, err)
		}
		if b[0].CheckSignatureFrom(signing) == nil {
			return certPEM, key, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("the cluster still issues kubelet %s certificates of another CA after %v: run the sign phase on the control-plane nodes first", what, k.Timeout)
		case <-time.After(2 * time.Second):
		}
	}
}

// issuing is here when the certificate is issued on this node, else
// cluster.
func (k *KubeletCert) issuing(here, cluster string) string {
	if k.IssuedHere {
		return here
	}
	return cluster
}

func (k *KubeletCert) client(ctx context.Context) (kubernetes.Interface, error) {
	if k.Client != nil {
		return k.Client(ctx)
	}
	c, _, err := apiclient.FromKubeconfig(k.KubeletConf, v1beta4.DefaultKubernetesAPICall)
	return c, err
}

// issueThroughAPI asks for the certificate as the kubelet does. A serving
// certificate waits for whoever approves the kubelets' serving requests;
// the request's name is printed first so that an administrator who
// approves them by hand knows which one.
func (k *KubeletCert) issueThroughAPI(ctx context.Context, r Request) ([]byte, error) {
	c, err := k.client(ctx)
	if err != nil {
		return nil, err
	}
	signer := kubeletClientSigner
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if r.Serving {
		signer = kubeletServingSigner
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		if _, rsa := r.Key.Public().(*rsa.PublicKey); rsa {
			usages = append(usages, certificatesv1.UsageKeyEncipherment)
		}
	}
	name, uid, err := csrutil.RequestCertificateWithContext(ctx, c, r.CSR, "", signer, nil, usages, r.Key)
	if err != nil {
		return nil, err
	}
	if r.Serving {
		fmt.Fprintf(k.Out, "[rotate-ca] Waiting for the CertificateSigningRequest %s to be approved and signed (approve it with \"kubectl certificate approve %s\" if nothing in the cluster approves the kubelets' serving requests)\n", name, name)
	}
	cert, err := csrutil.WaitForCertificate(ctx, c, name, uid)
	if err != nil && r.Serving {
		return nil, fmt.Errorf("the CertificateSigningRequest %s was not approved and signed: %w", name, err)
	}
	return cert, err
}

// install writes the new pair where the kubelet's kubeconfig names its
// credential: a new dated file of the kubelet's rotated pair and the link
// to it moved, a file replaced, or the kubeconfig's data.
func (k *KubeletCert) install(c *kubeletCred, certPEM []byte, key crypto.Signer) (string, error) {
	keyPEM, err := pki.EncodeKeyPEM(key)
	if err != nil {
		return "", err
	}
	if c.embedded {
		cfg, _, err := loadKubeconfig(c.cfgPath)
		if err != nil {
			return "", err
		}
		ai := cfg.AuthInfos[c.authInfoNm]
		ai.ClientCertificateData, ai.ClientKeyData = certPEM, keyPEM
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			return "", err
		}
		return c.cfgPath, atomicfile.WriteLike(c.cfgPath, data, c.cfgPath, pki.KeyMode)
	}
	if c.certFile != c.keyFile {
		if err := atomicfile.WriteLike(c.keyFile, keyPEM, c.keyFile, pki.KeyMode); err != nil {
			return "", err
		}
		return c.certFile, atomicfile.WriteLike(c.certFile, certPEM, c.certFile, pki.CertMode)
	}
	pair := append(append([]byte{}, certPEM...), keyPEM...)
	fi, err := os.Lstat(c.certFile)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return c.certFile, atomicfile.WriteLike(c.certFile, pair, c.certFile, pki.KeyMode)
	}
	// The kubelet's own rotation: a dated file, and the "-current" link
	// moved to it.
	target, err := filepath.EvalSymlinks(c.certFile)
	if err != nil {
		return "", err
	}
	now := time.Now
	if k.Now != nil {
		now = k.Now
	}
	prefix := strings.TrimSuffix(filepath.Base(c.certFile), "-current.pem")
	dated := filepath.Join(filepath.Dir(target), prefix+"-"+now().UTC().Format("2006-01-02-15-04-05")+".pem")
	if err := atomicfile.WriteLike(dated, pair, target, pki.KeyMode); err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(c.certFile), "."+filepath.Base(c.certFile)+".new")
	_ = os.Remove(tmp)
	if err := os.Symlink(dated, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, c.certFile); err != nil {
		return "", err
	}
	return dated, nil
}

// annotate sets key to value on this node's Node (named by the kubelet
// certificate's common name, system:node:<name>) when it differs.
func (k *KubeletCert) annotate(ctx context.Context, commonName, key, value string) error {
	node, ok := strings.CutPrefix(commonName, "system:node:")
	if !ok {
		return fmt.Errorf("the kubelet's client certificate is for %q, not a node", commonName)
	}
	c, err := k.client(ctx)
	if err != nil {
		return err
	}
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Node %s: %w", node, err)
	}
	if n.Annotations[key] == value {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if _, err := c.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("recording the rotation's step on the Node %s: %w", node, err)
	}
	return nil
}
