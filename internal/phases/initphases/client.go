package initphases

import (
	"context"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/noderole"
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
		// sent instead. The Node the kubelet would have registered by
		// now stands in for itself, so that mark-control-plane shows
		// its patch instead of waiting for a Node that never comes.
		d.client = apiclient.DryRunClient(d.Out, nil, registeredNode(d.Cfg.NodeRegistration.Name))
		return d.client, nil
	}
	if newClient == nil {
		newClient = func(ctx context.Context) (kubernetes.Interface, error) {
			timeout := time.Minute
			if t := d.Cfg.Timeouts; t != nil && t.KubernetesAPICall != nil {
				timeout = t.KubernetesAPICall.Duration
			}
			admin, server := d.KubeconfigPath, ""
			if def := filepath.Join(d.KubeconfigDir, "admin.conf"); admin == "" || filepath.Clean(admin) == def {
				// The admin.conf init writes names the control-plane
				// endpoint, which (a load balancer not set up yet) may not
				// answer before the cluster exists: as upstream v1.37's,
				// init talks to this node's own API server.
				admin = def
				if u, err := kubeconfig.LocalAPIServerURL(d.Cfg); err == nil {
					server = u
				}
			}
			return apiclient.AdminClient(ctx, admin, filepath.Join(d.KubeconfigDir, "super-admin.conf"), server, timeout)
		}
	}
	c, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	d.client = c
	return c, nil
}

// registeredNode is the Node named name as its kubelet registers it, with
// the hostname label.
func registeredNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{noderole.HostnameLabel: name},
	}}
}
