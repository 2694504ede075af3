package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
	"github.com/kubeadm-go/kubeadm/internal/tokenformat"
)

// TokenOptions are the inputs of token discovery.
type TokenOptions struct {
	// Endpoint is the API server's host:port.
	Endpoint string
	// Token is the bootstrap token "<id>.<secret>". Its secret checks the
	// signature of cluster-info; the whole token becomes the credential of
	// the returned kubeconfig.
	Token string
	// CACertHashes are pins of the cluster CA: "sha256:" and the hex
	// SHA-256 of a CA certificate's SubjectPublicKeyInfo. One match is
	// enough.
	CACertHashes []string
	// UnsafeSkipCAVerification allows CACertHashes to be empty; the
	// cluster is then trusted on the token's signature alone. Pins that are
	// given are checked all the same.
	UnsafeSkipCAVerification bool
	// Timeout bounds the whole discovery (DefaultTimeout when zero).
	Timeout time.Duration
}

// Token runs token discovery (see the package documentation) and returns
// TokenKubeconfig of the cluster in cluster-info, with its server and CA,
// and opts.Token as credential.
func (d *Discoverer) Token(ctx context.Context, opts TokenOptions) (*clientcmdapi.Config, error) {
	if !tokenformat.IsValid(opts.Token) {
		return nil, errors.New(`the discovery token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"`)
	}
	id, secret, _ := strings.Cut(opts.Token, ".")
	pins, err := parsePins(opts.CACertHashes)
	if err != nil {
		return nil, err
	}
	if len(pins) == 0 && !opts.UnsafeSkipCAVerification {
		return nil, errors.New("token discovery needs CA pins, or CA verification skipped explicitly")
	}
	if _, _, err := net.SplitHostPort(opts.Endpoint); err != nil {
		return nil, fmt.Errorf("the API server endpoint %q is not host:port: %w", opts.Endpoint, err)
	}
	end := d.deadline(opts.Timeout)
	server := "https://" + opts.Endpoint

	// First read: the server is not verified, so cluster-info is worth
	// nothing until the token's signature checks out.
	d.logf("[discovery] Reading cluster-info from %s without verifying the server, until it is signed for token ID %q", server, id)
	var content []byte
	var signature string
	err = d.readClusterInfo(ctx, end, &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		func(cm *corev1.ConfigMap, err error) (bool, error) {
			if err != nil {
				return classify(err, server)
			}
			sig, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
			if !ok {
				return false, fmt.Errorf("%w ID %q: there is no %s%s entry (the token may not exist, may have expired, or may lack the signing usage)",
					ErrNotSigned, id, bootstrapapi.JWSSignatureKeyPrefix, id)
			}
			signature, content = sig, []byte(cm.Data[bootstrapapi.KubeConfigKey])
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("token discovery at %s: %w", opts.Endpoint, err)
	}
	if err := VerifySignature(signature, content, id, secret); err != nil {
		return nil, fmt.Errorf("token discovery at %s: %w (token ID %q): %w; the token secret is wrong, or cluster-info was changed on its way",
			opts.Endpoint, ErrBadSignature, id, err)
	}
	cluster, err := parseClusterInfo(content)
	if err != nil {
		return nil, fmt.Errorf("token discovery at %s: %w", opts.Endpoint, err)
	}
	if len(pins) == 0 {
		d.logf("[discovery] cluster-info is signed for token ID %q; no CA pins given, so its CA is used unchecked (server %s)", id, cluster.Server)
		return TokenKubeconfig(cluster, opts.Token), nil
	}
	if err := checkPins(cluster.CertificateAuthorityData, pins); err != nil {
		return nil, fmt.Errorf("token discovery at %s: %w", opts.Endpoint, err)
	}

	// Second read: now that the CA is trusted, the same content must come
	// over TLS verified by it.
	d.logf("[discovery] The CA in cluster-info matches a pin; reading cluster-info again from %s, verified by that CA", server)
	err = d.readClusterInfo(ctx, end, &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CertificateAuthorityData}},
		func(cm *corev1.ConfigMap, err error) (bool, error) {
			if err != nil {
				return classify(err, server)
			}
			if !bytes.Equal([]byte(cm.Data[bootstrapapi.KubeConfigKey]), content) {
				return true, fmt.Errorf("%w (server %s)", ErrChanged, server)
			}
			return true, nil
		})
	if err != nil {
		return nil, fmt.Errorf("token discovery at %s: %w", opts.Endpoint, err)
	}
	d.logf("[discovery] cluster-info is signed for token ID %q and its CA matches a pin; using API server %s", id, cluster.Server)
	return TokenKubeconfig(cluster, opts.Token), nil
}

// readClusterInfo reads kube-public/cluster-info through a client made
// from cfg, and hands the result or the error of the read to check, until
// check says it is done or the deadline passes (see poll).
func (d *Discoverer) readClusterInfo(ctx context.Context, end deadline, cfg *rest.Config, check func(*corev1.ConfigMap, error) (done bool, err error)) error {
	cfg.Dial = d.dial()
	cfg.UserAgent = "kubeadm-discovery"
	cfg.QPS = -1 // poll paces the requests; no client-side rate limit
	// JSON, as every client of kubeadm (apiclient), rather than client-go's
	// protobuf: verbose logs can show it.
	cfg.ContentType = runtime.ContentTypeJSON
	// cluster-info is a small kubeconfig; before the server is verified
	// anyone may be answering.
	cfg.Wrap(boundedread.Transport(boundedread.MaxUnverified))
	// A refusal without a reason (a proxy in the way) says what was
	// refused and to whom, as for every client of kubeadm.
	cfg.Wrap(apiclient.ExplainRefusals(cfg))
	// Each request is bounded by poll's context; the client's own timeout
	// is the same bound, for any request made without it.
	cfg.Timeout = d.requestTimeout()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("making a client for %s: %w", cfg.Host, err)
	}
	httpClient.CheckRedirect = redirectpolicy.SameHost
	defer httpClient.CloseIdleConnections()
	client, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("making a client for %s: %w", cfg.Host, err)
	}
	return d.poll(ctx, end, func(ctx context.Context) (bool, error) {
		cm, err := client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			return check(nil, err)
		}
		return check(cm, nil)
	})
}
