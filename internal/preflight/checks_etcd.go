package preflight

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

const (
	// MinExternalEtcdVersion is the oldest external etcd this kubeadm
	// supports.
	MinExternalEtcdVersion = "3.5.24-0"
	// etcdVersionTimeout bounds the question to one etcd endpoint.
	etcdVersionTimeout = 10 * time.Second
)

// ExternalEtcdVersion asks every HTTP endpoint of the external etcd cluster
// for its version, with the configured client certificate, and fails for each
// that does not answer or runs a version older than MinExternalEtcdVersion.
func ExternalEtcdVersion(h Host, e *kubeadm.ExternalEtcd) Check {
	return Check{Name: "ExternalEtcdVersion", Run: func(ctx context.Context) Result {
		tlsConfig, err := etcdTLSConfig(h, e)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		min := utilversion.MustParseSemantic(MinExternalEtcdVersion)
		// /version is HTTP traffic: it goes to the HTTP endpoints, which
		// defaulting sets to the client endpoints when none are given.
		endpoints := e.HTTPEndpoints
		if len(endpoints) == 0 {
			endpoints = e.Endpoints
		}
		errs := make([]error, len(endpoints))
		var wg sync.WaitGroup
		for i, ep := range endpoints {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = checkEtcdEndpoint(ctx, h, ep, tlsConfig, min)
			}()
		}
		wg.Wait()
		return Result{Errors: compact(errs)}
	}}
}

// etcdTLSConfig builds the client TLS settings from the configured files;
// nil when none is configured.
func etcdTLSConfig(h Host, e *kubeadm.ExternalEtcd) (*tls.Config, error) {
	if e.CAFile == "" && e.CertFile == "" && e.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CAFile != "" {
		pem, err := h.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cannot load the external etcd CA certificate %s: %w", e.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cannot load the external etcd CA certificate %s: it holds no PEM certificate", e.CAFile)
		}
		cfg.RootCAs = pool
	}
	if e.CertFile != "" && e.KeyFile != "" {
		certPEM, err := h.ReadFile(e.CertFile)
		if err != nil {
			return nil, fmt.Errorf("cannot load the external etcd client certificate %s: %w", e.CertFile, err)
		}
		keyPEM, err := h.ReadFile(e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cannot load the external etcd client key %s: %w", e.KeyFile, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			// The parse error never quotes the key material.
			return nil, fmt.Errorf("cannot load the external etcd client certificate and key %s, %s: %w", e.CertFile, e.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// checkEtcdEndpoint asks one endpoint for GET /version.
func checkEtcdEndpoint(ctx context.Context, h Host, endpoint string, tlsConfig *tls.Config, min *utilversion.Version) error {
	ctx, cancel := context.WithTimeout(ctx, etcdVersionTimeout)
	defer cancel()
	u := strings.TrimSuffix(endpoint, "/") + "/version"
	body, err := h.HTTPGet(ctx, u, tlsConfig)
	if err != nil {
		return fmt.Errorf("asking the external etcd at %s for its version: %w", endpoint, err)
	}
	var answer struct {
		Server string `json:"etcdserver"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("the external etcd at %s answered %s with something that is not a version: %w", endpoint, u, err)
	}
	v, err := utilversion.ParseSemantic(answer.Server)
	if err != nil {
		return fmt.Errorf("the external etcd at %s reports the version %q, which cannot be parsed: %w", endpoint, answer.Server, err)
	}
	if v.LessThan(min) {
		return fmt.Errorf("the external etcd at %s runs version %s; this kubeadm supports %s or newer", endpoint, answer.Server, MinExternalEtcdVersion)
	}
	return nil
}

// ExternalEtcdClientCertificates are FileExisting-style checks, one per
// configured file, all under the name "ExternalEtcdClientCertificates".
func ExternalEtcdClientCertificates(h Host, e *kubeadm.ExternalEtcd) []Check {
	var checks []Check
	for _, p := range []string{e.CAFile, e.CertFile, e.KeyFile} {
		if p == "" {
			continue
		}
		checks = append(checks, Check{Name: "ExternalEtcdClientCertificates", Run: func(context.Context) Result {
			if _, err := h.Stat(p); err != nil {
				return fail("%s does not exist", p)
			}
			return Result{}
		}})
	}
	return checks
}
