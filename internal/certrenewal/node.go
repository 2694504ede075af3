package certrenewal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/podrestart"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// NodeComponents is the Node of a real control-plane node: its static Pod
// manifests say where each component answers, Restarter restarts them
// through the container runtime.
type NodeComponents struct {
	ManifestDir string
	Restarter   *podrestart.Restarter
	// Served returns the certificate the TLS server at addr presents; nil:
	// ServedCertificate.
	Served func(ctx context.Context, addr string) (*x509.Certificate, error)
	// Timeout bounds each wait; Interval separates two looks (0: 1 s).
	Timeout  time.Duration
	Interval time.Duration
}

// endpoints reads where component answers: its health URL, and the
// address of its TLS server (the API server's port, etcd's first client
// URL).
func (n *NodeComponents) endpoints(component string) (health, tlsAddr string, err error) {
	pod, err := staticpod.ReadManifest(staticpod.ManifestPath(n.ManifestDir, component))
	if err != nil {
		return "", "", err
	}
	health, err = staticpod.HealthURL(pod)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", component, err)
	}
	switch component {
	case "kube-apiserver":
		u, err := url.Parse(health)
		if err != nil {
			return "", "", err
		}
		tlsAddr = u.Host
	case "etcd":
		first, _, _ := strings.Cut(staticpod.Flags(pod)["listen-client-urls"], ",")
		u, err := url.Parse(first)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("etcd: no client URL in its manifest's --listen-client-urls")
		}
		tlsAddr = u.Host
	}
	return health, tlsAddr, nil
}

// Restart restarts component's container and waits until the new one is
// healthy and, with the Restarter's Leaders set, leads.
func (n *NodeComponents) Restart(ctx context.Context, component string) error {
	return n.Restarter.RestartPod(ctx, n.ManifestDir, component)
}

// Reloaded waits until component is healthy and, when want is set, its
// TLS server presents want.
func (n *NodeComponents) Reloaded(ctx context.Context, component string, want *x509.Certificate) error {
	health, addr, err := n.endpoints(component)
	if err != nil {
		return err
	}
	servedFn := n.Served
	if servedFn == nil {
		servedFn = ServedCertificate
	}
	interval := n.Interval
	if interval <= 0 {
		interval = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	var last error
	for {
		if err := n.Restarter.Probe(ctx, health); err != nil {
			last = fmt.Errorf("%s: %w", health, err)
		} else if want == nil || addr == "" {
			return nil
		} else if got, err := servedFn(ctx, addr); err != nil {
			last = err
		} else if got.Equal(want) {
			return nil
		} else {
			last = fmt.Errorf("%s still serves the certificate with serial %s, not the renewed one (%s)", addr, got.SerialNumber, want.SerialNumber)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready on its renewed certificates after %v: %w", component, n.Timeout, last)
		case <-time.After(interval):
		}
	}
}

// ServedCertificate connects to the TLS server at addr and returns the
// certificate it presents. It verifies nothing and sends no client
// certificate: the handshake may then fail (etcd asks for one), after the
// server's certificate has been seen.
func ServedCertificate(ctx context.Context, addr string) (*x509.Certificate, error) {
	var seen *x509.Certificate
	cfg := &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // only reads which certificate is served
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) > 0 {
				seen, _ = x509.ParseCertificate(raw[0])
			}
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if conn != nil {
		conn.Close()
	}
	if seen != nil {
		return seen, nil
	}
	if err == nil {
		err = errors.New("no certificate presented")
	}
	return nil, fmt.Errorf("reading the certificate %s serves: %w", addr, err)
}
