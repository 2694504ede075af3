package initphases

import (
	"context"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
)

// Client returns a client for the new cluster's API server with admin.conf's
// credentials, made and authorized on first use (see
// apiclient.AdminClient) and then reused by every later phase; under
// --dry-run, a client that prints each request and changes nothing. Tests
// set NewClient to hand in their own.
func (d *Data) Client(ctx context.Context) (kubernetes.Interface, error) {
	if d.client != nil {
		return d.client, nil
	}
	newClient := d.NewClient
	if newClient == nil && d.DryRun {
		// A dry run has no API server to talk to: print what would be
		// sent instead.
		d.client = apiclient.DryRunClient(d.Out, nil)
		return d.client, nil
	}
	if newClient == nil {
		newClient = func(ctx context.Context) (kubernetes.Interface, error) {
			timeout := time.Minute
			if t := d.Cfg.Timeouts; t != nil && t.KubernetesAPICall != nil {
				timeout = t.KubernetesAPICall.Duration
			}
			admin := d.KubeconfigPath
			if admin == "" {
				admin = filepath.Join(d.KubeconfigDir, "admin.conf")
			}
			return apiclient.AdminClient(ctx, admin, filepath.Join(d.KubeconfigDir, "super-admin.conf"), timeout)
		}
	}
	c, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	d.client = c
	return c, nil
}
