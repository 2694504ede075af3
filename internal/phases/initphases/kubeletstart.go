package initphases

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/machine"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// kubeletStartHost is what the kubelet-start phase needs from the machine.
type kubeletStartHost struct {
	system   kubelet.Host
	hostname func() (string, error)
}

// KubeletStartPhase writes the kubelet's files and (re)starts it.
func KubeletStartPhase() workflow.Phase[*Data] { return kubeletStartPhase(nil, osKubeletStartHost()) }

func osKubeletStartHost() kubeletStartHost {
	return kubeletStartHost{system: kubelet.OSHost{}, hostname: machine.Hostname}
}

// kubeletStartPhase is KubeletStartPhase on host, letting hs (when not
// nil) start the kubelet ahead of the phase's turn.
func kubeletStartPhase(hs *kubeletHeadStart, host kubeletStartHost) workflow.Phase[*Data] {
	if hs != nil {
		hs.startKubelet = func(ctx context.Context, d *Data, w io.Writer) error {
			// The kubelet watches the manifest folder at once only when it
			// exists (else it looks again every second).
			if err := os.MkdirAll(d.ManifestDir, staticpod.DirMode); err != nil {
				return fmt.Errorf("creating the manifest folder: %w", err)
			}
			return runKubeletStart(ctx, d, host, w)
		}
		hs.stopKubelet = func(ctx context.Context) error {
			return kubelet.NewService(host.system, io.Discard).StopService(ctx)
		}
	}
	return workflow.Phase[*Data]{
		Name:  "kubelet-start",
		Short: "Write the kubelet's configuration and flags, then (re)start it",
		Long: `Write the kubelet's files into /var/lib/kubelet: config.yaml (the cluster's
KubeletConfiguration, with any "kubeletconfiguration" patches applied),
instance-config.yaml (this node's own settings) and kubeadm-flags.env (the
node-specific command-line flags). The kubelet service is stopped while they
are written and restarted afterwards, through systemd or OpenRC; on a machine
with neither, start the kubelet yourself.`,
		Example: `  # Write the kubelet's files from a configuration file and restart it
  kubeadm init phase kubelet-start --config kubeadm.yaml`,
		InheritFlags: []string{"config", "cri-socket", "dry-run", "image-repository", "node-name", "patches"},
		Run: func(ctx context.Context, d *Data) error {
			if ok, err := hs.kubeletDone(d, d.Out); ok {
				return err
			}
			return runKubeletStart(ctx, d, host, d.Out)
		},
		Finish: hs.finish,
	}
}

// runKubeletStart writes kubeadm-flags.env, instance-config.yaml (the CRI
// socket) and config.yaml, in that order, with the
// kubelet stopped meanwhile. It is idempotent: the files are rewritten from
// the configuration every time and restarting a running kubelet is fine.
// Under --dry-run the files go to d.KubeletDir (the dry-run folder) and the
// service is left alone. Progress goes to out.
func runKubeletStart(ctx context.Context, d *Data, h kubeletStartHost, out io.Writer) error {
	cfg := d.Cfg
	if cfg == nil || cfg.ComponentConfigs.Kubelet == nil {
		return errors.New("writing the kubelet's files: the configuration holds no KubeletConfiguration")
	}
	hostname, err := h.hostname()
	if err != nil {
		return fmt.Errorf("writing the kubelet's flags: finding the host name: %w", err)
	}
	svc := kubelet.NewService(h.system, out)
	if !d.DryRun {
		svc.Stop(ctx)
	}

	flags := kubelet.FlagOptions{
		NodeRegistration: &cfg.NodeRegistration,
		Hostname:         hostname,
	}
	if err := kubelet.WriteFlagsEnv(d.KubeletDir, flags, out); err != nil {
		return err
	}
	opts := kubelet.ConfigOptions{PatchesDir: d.PatchesDir}
	if hardened(d) {
		opts.Mode = cis.FileMode
	}
	if err := kubelet.WriteInstanceConfig(d.KubeletDir, cfg.NodeRegistration.CRISocket, out); err != nil {
		return err
	}
	opts.CRISocket = cfg.NodeRegistration.CRISocket
	opts.ResolvConf = svc.ResolvConf(ctx)
	if err := kubelet.WriteConfig(d.KubeletDir, cfg.ComponentConfigs.Kubelet, opts, out); err != nil {
		return err
	}

	if !d.DryRun {
		svc.Start(ctx)
	}
	return nil
}
