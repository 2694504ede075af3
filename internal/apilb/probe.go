package apilb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// maxProbeBody bounds what is read of a /readyz answer ("ok", or a list
// of checks when it fails).
const maxProbeBody = 64 << 10

// ReadyzProber returns a Prober that asks https://ADDR/readyz with tlsCfg
// and takes a 200 answer as healthy. Connections are kept between probes
// (one TLS handshake per upstream, not one per probe); after a failure the
// idle ones are dropped, so the next probe dials afresh. dial opens the
// connections (a net.Dialer's when nil).
func ReadyzProber(tlsCfg *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) Prober {
	tr := &http.Transport{
		DialContext:         dial,
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Minute,
		TLSHandshakeTimeout: DefaultProbeTimeout,
	}
	hc := &http.Client{Transport: tr, CheckRedirect: redirectpolicy.SameHost}
	return func(ctx context.Context, addr string) error {
		err := probe(ctx, hc, addr)
		if err != nil {
			tr.CloseIdleConnections()
		}
		return err
	}
}

func probe(ctx context.Context, hc *http.Client, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := boundedread.ReadAll(resp.Body, maxProbeBody, "/readyz of "+addr)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %s: %.200s", resp.Status, body)
	}
	return nil
}

// KubeletClientCertFile is the kubelet's current client certificate and
// key (one PEM file, a link the kubelet moves at every rotation).
const KubeletClientCertFile = "/var/lib/kubelet/pki/kubelet-client-current.pem"

// TLSFromKubeconfig returns the TLS configuration to reach the API
// servers of the kubeconfig at path: its cluster's CA, ServerName as the
// name checked, and a client certificate read again at every handshake,
// so that a rotated kubelet certificate is picked up (see
// ClientCertificate). Without any certificate the connection is anonymous
// (enough for /readyz, which system:public-info-viewer grants).
func TLSFromKubeconfig(path, certFile string) (*tls.Config, error) {
	cfg, err := kubeconfig.Load(path)
	if err != nil {
		return nil, err
	}
	rc, err := kubeconfig.RESTConfig(cfg, "")
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rc.CAData) {
		return nil, fmt.Errorf("kubeconfig %s: no CA certificate for its cluster", path)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    pool,
		ServerName: ServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			certPEM, keyPEM, err := ClientCertificate(path, certFile)
			if err != nil {
				return nil, err
			}
			if len(certPEM) == 0 {
				return &tls.Certificate{}, nil
			}
			c, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return nil, fmt.Errorf("client certificate: %w", err)
			}
			return &c, nil
		},
	}, nil
}

// ClientCertificate returns the client certificate and key to present:
// those of certFile (the kubelet's current one, both in one PEM file) when
// it can be read, else those the kubeconfig at path holds or names (none
// when it has none). certFile comes first because the kubeconfig, mounted
// into the Pod as a single file, stays the version the Pod started with
// when kubeadm replaces it (as kubelet-finalize does), while the kubelet
// rotates certFile in a folder the Pod sees live.
func ClientCertificate(path, certFile string) (certPEM, keyPEM []byte, err error) {
	if certFile != "" {
		data, err := boundedread.ReadFile(certFile, boundedread.MaxFile)
		if err == nil {
			return data, data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	cfg, err := kubeconfig.Load(path)
	if err != nil {
		return nil, nil, err
	}
	rc, err := kubeconfig.RESTConfig(cfg, "")
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return rc.CertData, rc.KeyData, nil
}
