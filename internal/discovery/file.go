package discovery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// File runs file discovery: location is a kubeconfig file's path or an
// https URL, fetched once and verified with RootCAs. Its cluster is the
// current context's, or the only one when there is no current context,
// and must have an https server and a CA.
//
// Then, as upstream does, cluster-info is read from that cluster, over TLS
// verified by the file's CA and with the file's credential if it has one,
// retrying until the timeout while the server does not answer. When
// cluster-info is read and well formed, the server and CA of its cluster
// replace those of the file's cluster; when it is missing, forbidden or
// malformed the file is used as it is (this is logged). A server
// certificate that does not verify against the file's CA is an error.
//
// The result is the file's kubeconfig with that cluster: its users,
// contexts and current context are kept, so a credential in the file stays
// the credential of the result. The cluster's CA is embedded and
// insecure-skip-tls-verify turned off; other paths in a local file are
// made absolute.
func (d *Discoverer) File(ctx context.Context, location string, timeout time.Duration) (*clientcmdapi.Config, error) {
	end := d.deadline(timeout)
	cfg, err := d.loadFile(ctx, end, location)
	if err != nil {
		return nil, err
	}
	name, cluster, err := currentCluster(cfg)
	if err != nil {
		return nil, fmt.Errorf("the discovery file %s: %w", location, err)
	}
	cfg.Clusters[name] = cluster
	refreshed, err := d.refresh(ctx, end, cfg, cluster)
	if err != nil {
		return nil, fmt.Errorf("file discovery with %s: %w", location, err)
	}
	if refreshed != nil {
		cluster.Server = refreshed.Server
		cluster.CertificateAuthorityData = refreshed.CertificateAuthorityData
	}
	return cfg, nil
}

// loadFile reads the discovery kubeconfig from a path or an https URL.
func (d *Discoverer) loadFile(ctx context.Context, end deadline, location string) (*clientcmdapi.Config, error) {
	lower := strings.ToLower(location)
	switch {
	case strings.HasPrefix(lower, "https://"):
		data, err := d.fetch(ctx, end, location)
		if err != nil {
			return nil, err
		}
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return nil, fmt.Errorf("parsing the discovery file from %s: %w", location, err)
		}
		return cfg, nil
	case strings.Contains(lower, "://"):
		return nil, fmt.Errorf("the discovery file URL %s must use https", location)
	default:
		cfg, err := kubeconfig.Load(location)
		if err != nil {
			return nil, fmt.Errorf("loading the discovery file: %w", err)
		}
		return cfg, nil
	}
}

// fetch gets url once, verified with RootCAs, within the request timeout
// and the deadline.
func (d *Discoverer) fetch(ctx context.Context, end deadline, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(min(d.requestTimeout(), end.at.Sub(d.clock().Now())), time.Millisecond))
	defer cancel()
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.dial(),
		TLSClientConfig:     &tls.Config{RootCAs: d.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
	}
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("the discovery file URL %s: %w", url, err)
	}
	// The file decides which cluster to trust: a redirect must not take
	// the request to another host, nor off https.
	client := &http.Client{Transport: transport, CheckRedirect: redirectpolicy.SameHost}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the discovery file: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the discovery file from %s: HTTP status %s", url, resp.Status)
	}
	data, err := boundedread.ReadAll(resp.Body, boundedread.MaxUnverified, "the discovery file at "+url)
	if err != nil {
		return nil, fmt.Errorf("reading the discovery file from %s: %w", url, err)
	}
	return data, nil
}

// refresh reads cluster-info from cluster with the credential of cfg's
// current context, if any, and returns the cluster in it, or nil when the
// file should be used as it is.
func (d *Discoverer) refresh(ctx context.Context, end deadline, cfg *clientcmdapi.Config, cluster *clientcmdapi.Cluster) (*clientcmdapi.Cluster, error) {
	const name = "discovery"
	only := clientcmdapi.NewConfig()
	only.Clusters[name] = cluster
	only.Contexts[name] = &clientcmdapi.Context{Cluster: name}
	only.CurrentContext = name
	if cur := cfg.Contexts[cfg.CurrentContext]; cur != nil && cfg.AuthInfos[cur.AuthInfo] != nil {
		only.AuthInfos[name] = cfg.AuthInfos[cur.AuthInfo]
		only.Contexts[name].AuthInfo = name
	}
	restCfg, err := kubeconfig.RESTConfig(only, "")
	if err != nil {
		return nil, fmt.Errorf("making a client from the discovery file: %w", err)
	}
	var refreshed *clientcmdapi.Cluster
	server := restCfg.Host
	d.logf("[discovery] Reading cluster-info from %s, verified by the discovery file's CA, to refresh the cluster's server and CA", server)
	err = d.readClusterInfo(ctx, end, restCfg, func(cm *corev1.ConfigMap, err error) (bool, error) {
		if err != nil {
			final, err := classify(err, server)
			if errors.Is(err, ErrClusterInfoMissing) || errors.Is(err, ErrClusterInfoForbidden) {
				d.logf("[discovery] %v; using the discovery file as it is", err)
				return true, nil
			}
			return final, err
		}
		c, err := parseClusterInfo([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
		if err != nil {
			d.logf("[discovery] cluster-info at %s is not usable (%v); using the discovery file as it is", server, err)
			return true, nil
		}
		d.logf("[discovery] Using the server %s and the CA from cluster-info", c.Server)
		refreshed = c
		return true, nil
	})
	return refreshed, err
}
