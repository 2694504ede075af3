package initphases

import (
	"context"

	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// CertsRenewalPhase installs the daily automatic renewal of the
// certificates of this control-plane node. Upstream kubeadm has no such
// phase.
func CertsRenewalPhase() workflow.Phase[*Data] {
	return certsRenewalPhase(kubelet.OSHost{})
}

// certsRenewalPhase is CertsRenewalPhase on an injected host.
func certsRenewalPhase(host kubelet.Host) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "certs-renewal",
		Short: "Install the daily renewal of the certificates that expire soon",
		Long: `Install a systemd service and timer (on OpenRC hosts, a daily crond script)
that run "kubeadm ` + certrenewal.RenewCommand + `" once a day, at a random time in its first
hours: it renews the certificates of this node, and those embedded in its
kubeconfig files, that expire within 90 days, and has the control-plane
components use them. "kubeadm reset" removes them.

Skip this phase (--skip-phases=certs-renewal) to renew certificates yourself.`,
		Example: `  # Install the renewal timer on a node set up without it
  kubeadm init phase certs-renewal`,
		InheritFlags: []string{"dry-run"},
		Run: func(ctx context.Context, d *Data) error {
			return InstallCertsRenewal(ctx, d, host)
		},
	}
}

// InstallCertsRenewal writes and enables the renewal's schedule for the
// node of d (into the dry-run folder under --dry-run).
func InstallCertsRenewal(ctx context.Context, d *Data, host kubelet.Host) error {
	path := d.KubeadmPath
	if path == "" {
		path = certrenewal.KubeadmPath()
	}
	dir := ""
	if d.DryRun {
		dir = d.DryRunDir
	}
	s := certrenewal.Schedule{Host: host, Root: d.SystemRoot, Out: d.Out}
	if err := s.Install(ctx, path, dir); err != nil || dir == "" {
		return err
	}
	return showDryRunRenewal(d)
}
