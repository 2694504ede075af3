package staticpod

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
)

// ProbeClient is an HTTP client that asks the components' health
// endpoints (see HealthURL) as the kubelet's probes do: without verifying
// their self-signed serving certificates, without a proxy (the endpoints
// are local) and with a new connection for every request. It follows
// redirects only on the same host (redirectpolicy.SameHost).
func ProbeClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificates, as the kubelet's probes see them
			DisableKeepAlives: true,
		},
		CheckRedirect: redirectpolicy.SameHost,
	}
}

// Probe asks url with c and wants HTTP 200; for another status the error
// carries the start of the answer.
func Probe(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		start := make([]byte, 1024)
		n, _ := io.ReadFull(resp.Body, start)
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(start[:n])))
	}
	return nil
}
