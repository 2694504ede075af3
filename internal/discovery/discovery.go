package discovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/clock"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
	"github.com/kubeadm-go/kubeadm/internal/tokenformat"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

const (
	// DefaultTimeout bounds discovery when the configuration sets no
	// timeouts.discovery.
	DefaultTimeout = v1beta4.DefaultDiscovery
	// DefaultInterval is the wait between two reads of cluster-info.
	DefaultInterval = 5 * time.Second
	// DefaultRequestTimeout bounds one request to the API server.
	DefaultRequestTimeout = 10 * time.Second
)

// The kinds of failure, for errors.Is. Each error discovery returns wraps
// one of them, with the details of the case.
var (
	// ErrUnreachable: the API server did not answer (no connection, a
	// failed handshake, no response in time).
	ErrUnreachable = errors.New("could not reach the API server")
	// ErrClusterInfoMissing: the API server answered that there is no
	// kube-public/cluster-info ConfigMap.
	ErrClusterInfoMissing = errors.New("the kube-public/cluster-info ConfigMap does not exist")
	// ErrClusterInfoForbidden: the API server refused to give cluster-info
	// to this client (anonymous access off, or its RBAC missing).
	ErrClusterInfoForbidden = errors.New("the API server refused to give out the kube-public/cluster-info ConfigMap")
	// ErrNotSigned: cluster-info carries no signature for the token ID.
	ErrNotSigned = errors.New("cluster-info is not signed for the token")
	// ErrBadSignature: the token's signature of cluster-info does not
	// verify with the token secret.
	ErrBadSignature = errors.New("the token's signature of cluster-info does not verify")
	// ErrPinMismatch: the CA in cluster-info matches none of the pins.
	ErrPinMismatch = errors.New("none of the CA's public keys matches the pins given")
	// ErrUntrustedServer: the API server's certificate does not verify
	// against the CA discovery trusts.
	ErrUntrustedServer = errors.New("the API server's certificate does not verify against the cluster CA")
	// ErrChanged: cluster-info read over verified TLS differs from the
	// copy read before the CA was known.
	ErrChanged = errors.New("cluster-info read over verified TLS differs from the unverified copy")
)

// Clock is the time source of the polling. Tests use one that does not
// wait.
type Clock = clock.Clock

// Discoverer runs discovery. Its fields are its dependencies; the zero
// value dials with a plain net.Dialer, trusts the system's CAs for https
// discovery files, polls every DefaultInterval on the real clock and logs
// nothing. A Discoverer is not changed by its methods and may be used
// concurrently.
type Discoverer struct {
	// DialContext opens the TCP connections to API servers and to the
	// discovery file's web server.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies the web server of an https discovery file; nil
	// means the system's CA bundle.
	RootCAs *x509.CertPool
	// Clock measures the timeout and waits between polls.
	Clock Clock
	// Interval is the wait between two reads of cluster-info
	// (DefaultInterval when zero).
	Interval time.Duration
	// RequestTimeout bounds each request (DefaultRequestTimeout when
	// zero); the overall timeout still applies.
	RequestTimeout time.Duration
	// Logf receives progress messages, one line each; nil drops them.
	Logf func(format string, args ...any)
}

func (d *Discoverer) dial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.DialContext != nil {
		return d.DialContext
	}
	return (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
}

func (d *Discoverer) clock() Clock {
	if d.Clock != nil {
		return d.Clock
	}
	return clock.Real{}
}

func (d *Discoverer) interval() time.Duration {
	if d.Interval > 0 {
		return d.Interval
	}
	return DefaultInterval
}

func (d *Discoverer) requestTimeout() time.Duration {
	if d.RequestTimeout > 0 {
		return d.RequestTimeout
	}
	return DefaultRequestTimeout
}

func (d *Discoverer) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
}

// deadline is the end of a discovery that may take timeout.
type deadline struct {
	at      time.Time
	timeout time.Duration
}

func (d *Discoverer) deadline(timeout time.Duration) deadline {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return deadline{at: d.clock().Now().Add(timeout), timeout: timeout}
}

// poll calls try until it reports done, waiting the interval between
// calls. try's context ends after the request timeout or at the deadline,
// whichever comes first. When the deadline passes or ctx ends first, the
// error wraps the last one try returned, or the one before when the
// deadline cut the last attempt short (its error would only say so).
func (d *Discoverer) poll(ctx context.Context, end deadline, try func(context.Context) (done bool, err error)) error {
	var last error
	for {
		remaining := end.at.Sub(d.clock().Now())
		reqCtx, cancel := context.WithTimeout(ctx, max(min(d.requestTimeout(), remaining), time.Millisecond))
		done, err := try(reqCtx)
		cutShort := reqCtx.Err() != nil && ctx.Err() == nil && !d.clock().Now().Before(end.at)
		cancel()
		if done {
			return err
		}
		if cutShort && last != nil {
			err = last
		}
		last = err
		if ctx.Err() != nil {
			return fmt.Errorf("discovery interrupted (%w); the last attempt failed: %w", ctx.Err(), err)
		}
		remaining = end.at.Sub(d.clock().Now())
		if remaining <= 0 {
			return fmt.Errorf("gave up after %v: %w", end.timeout, err)
		}
		wait := min(d.interval(), remaining)
		d.logf("[discovery] %v; trying again in %v", err, wait)
		select {
		case <-ctx.Done():
			return fmt.Errorf("discovery interrupted (%w); the last attempt failed: %w", ctx.Err(), err)
		case <-d.clock().After(wait):
		}
	}
}

// classify turns a failed read of cluster-info at server into one of the
// package's errors, and tells whether trying again may help: a server
// certificate that does not verify will not start verifying.
func classify(err error, server string) (final bool, out error) {
	var (
		status   apierrors.APIStatus
		tooLarge *boundedread.TooLargeError
	)
	switch {
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("%w at %s", ErrClusterInfoMissing, server)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return false, fmt.Errorf("%w at %s: %w", ErrClusterInfoForbidden, server, err)
	case errors.As(err, &status):
		return false, fmt.Errorf("reading cluster-info at %s: %w", server, err)
	case isCertificateError(err):
		return true, fmt.Errorf("%w (server %s): %w", ErrUntrustedServer, server, err)
	case errors.As(err, &tooLarge):
		// cluster-info is a few KiB; asking again will not shrink it.
		// client-go's wrapping would only say to retry.
		return true, fmt.Errorf("reading cluster-info at %s: %w", server, tooLarge)
	case errors.Is(err, redirectpolicy.ErrRefused):
		return true, fmt.Errorf("reading cluster-info at %s: %w", server, err)
	default:
		return false, fmt.Errorf("%w at %s: %w", ErrUnreachable, server, err)
	}
}

// isCertificateError tells whether err comes from verifying the server's
// certificate.
func isCertificateError(err error) bool {
	var (
		unknown   x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verifying *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verifying)
}

// TLSBootstrapConfig runs the discovery cfg.Discovery asks for, within
// cfg.Timeouts.Discovery (DefaultTimeout when unset), and returns the
// kubeconfig for the TLS bootstrap: the discovered cluster with, as
// upstream chooses, the TLS bootstrap token as credential when one is
// given (user BootstrapUser, cluster ClusterName), or else the credential
// the discovery file carries. File discovery without either is an error.
func (d *Discoverer) TLSBootstrapConfig(ctx context.Context, cfg *kubeadm.JoinConfiguration) (*clientcmdapi.Config, error) {
	timeout := DefaultTimeout
	if cfg.Timeouts != nil && cfg.Timeouts.Discovery != nil {
		timeout = cfg.Timeouts.Discovery.Duration
	}
	disc := cfg.Discovery
	tlsToken := disc.TLSBootstrapToken
	if tlsToken != "" && !tokenformat.IsValid(tlsToken) {
		return nil, errors.New(`the TLS bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"`)
	}
	switch {
	case disc.BootstrapToken != nil && disc.File != nil:
		return nil, errors.New("discovery needs either a bootstrap token or a file, not both")
	case disc.BootstrapToken != nil:
		bt := disc.BootstrapToken
		kc, err := d.Token(ctx, TokenOptions{
			Endpoint:                 bt.APIServerEndpoint,
			Token:                    bt.Token,
			CACertHashes:             bt.CACertHashes,
			UnsafeSkipCAVerification: bt.UnsafeSkipCAVerification,
			Timeout:                  timeout,
		})
		if err != nil {
			return nil, err
		}
		if tlsToken != "" {
			kc.AuthInfos[BootstrapUser].Token = tlsToken
		}
		return kc, nil
	case disc.File != nil:
		kc, err := d.File(ctx, disc.File.KubeConfigPath, timeout)
		if err != nil {
			return nil, err
		}
		if tlsToken != "" {
			_, cluster, err := currentCluster(kc)
			if err != nil {
				return nil, err
			}
			return TokenKubeconfig(cluster, tlsToken), nil
		}
		if !HasCredentials(kc) {
			return nil, fmt.Errorf("the discovery file %s carries no credential for the TLS bootstrap; give a TLS bootstrap token, or a discovery file with a user credential", disc.File.KubeConfigPath)
		}
		return kc, nil
	default:
		return nil, errors.New("the join configuration names no discovery: neither a bootstrap token nor a file")
	}
}
