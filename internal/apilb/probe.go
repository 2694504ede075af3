package apilb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
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

// TLSFromKubeconfig returns the TLS configuration to reach the API
// servers of the kubeconfig at path: its cluster's CA, ServerName as the
// name checked, and its user's client certificate when it has one, read
// again at every handshake so that a rotated kubelet certificate is
// picked up. A user without a certificate leaves the connection
// anonymous (enough for /readyz, which system:public-info-viewer grants).
func TLSFromKubeconfig(path string) (*tls.Config, error) {
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
			return clientCertificate(path)
		},
	}, nil
}

// clientCertificate reads the client certificate and key of the
// kubeconfig at path; none (an empty certificate) when it has none.
func clientCertificate(path string) (*tls.Certificate, error) {
	cfg, err := kubeconfig.Load(path)
	if err != nil {
		return nil, err
	}
	rc, err := kubeconfig.RESTConfig(cfg, "")
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if len(rc.CertData) == 0 || len(rc.KeyData) == 0 {
		return &tls.Certificate{}, nil
	}
	c, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
	if err != nil {
		return nil, fmt.Errorf("client certificate of kubeconfig %s: %w", path, err)
	}
	return &c, nil
}
