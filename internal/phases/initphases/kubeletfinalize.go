package initphases

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// kubeletClientCertFile is where, under the kubelet's folder, the kubelet
// keeps its current client certificate and key (one PEM file, renewed in
// place) once its TLS bootstrap is done.
const kubeletClientCertFile = "pki/kubelet-client-current.pem"

// kubeletFinalizeFlags are the flags of "kubeadm init" the kubelet-finalize
// phase commands accept, as upstream's do.
func kubeletFinalizeFlags() []string { return []string{"cert-dir", "config", "dry-run"} }

// KubeletFinalizePhase adjusts the kubelet's settings after its TLS
// bootstrap: kubelet.conf stops embedding the client certificate kubeadm
// made and names the file the kubelet renews itself.
func KubeletFinalizePhase() workflow.Phase[*Data] {
	return kubeletFinalizePhase(kubelet.OSHost{})
}

// kubeletFinalizePhase is KubeletFinalizePhase on an injected host.
func kubeletFinalizePhase(host kubelet.Host) workflow.Phase[*Data] {
	restart := &backgroundRestart{}
	return workflow.Phase[*Data]{
		Name:  "kubelet-finalize",
		Short: "Adjust the kubelet's settings once its TLS bootstrap is done",
		Long: `Adjust the kubelet's settings that depend on its TLS bootstrap having
finished.`,
		Example: `  # Run every step with the settings of a configuration file
  kubeadm init phase kubelet-finalize all --config kubeadm.yaml`,
		Phases: []workflow.Phase[*Data]{
			{
				Name:           "all",
				Short:          "Run every kubelet-finalize step",
				RunAllSiblings: true,
				InheritFlags:   kubeletFinalizeFlags(),
			},
			{
				Name:  "enable-client-cert-rotation",
				Short: "Point kubelet.conf at the client certificate the kubelet renews",
				Long: `Once the kubelet has its own client certificate (` + KubeletDir + `/` + kubeletClientCertFile + `),
rewrite kubelet.conf to use that file instead of the embedded certificate
kubeadm made, and restart the kubelet, so that the kubelet's renewals take
effect. Without that file the certificate is left as it is. With the
NodeLocalAPILoadBalancer feature gate, kubelet.conf is also pointed at the
node's API server load balancer (` + apilb.URL + `).`,
				InheritFlags: kubeletFinalizeFlags(),
				Run: func(ctx context.Context, d *Data) error {
					return enableClientCertRotation(ctx, d, host, restart)
				},
				Finish: func(_ context.Context, d *Data, _ error) {
					restart.wait(d.Out)
				},
			},
		},
	}
}

// enableClientCertRotation points the current user of kubelet.conf at the
// kubelet's rotating certificate file and, with the NodeLocalAPILoadBalancer
// gate, its cluster at the node-local load balancer (docs/decisions/009),
// then has restart restart the kubelet (not under --dry-run). It is
// idempotent: a kubelet.conf that already does both is left alone and the
// kubelet is not restarted. Without the certificate file (the kubelet has
// not bootstrapped, or does not rotate) the user is left as it is,
// silently at the default verbosity, as upstream kubeadm.
func enableClientCertRotation(ctx context.Context, d *Data, host kubelet.Host, restart *backgroundRestart) error {
	pem := filepath.Join(d.KubeletDir, kubeletClientCertFile)
	rotate := true
	if _, err := os.Stat(pem); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("looking for the kubelet's client certificate: %w", err)
		}
		klog.V(1).Infof("[kubelet-finalize] %s does not exist: the kubelet's client certificate is not rotated, kubelet.conf keeps its user", pem)
		rotate = false
	}
	balancer := d.Cfg != nil && APIServerLBEnabled(d)
	if !rotate && !balancer {
		return nil
	}
	path := filepath.Join(d.KubeconfigDir, "kubelet.conf")
	// Read as it is, without making its paths absolute: it is written back.
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig file: %w", err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig file %s: %w", path, err)
	}
	changed := false
	if rotate {
		_, user, err := kubeconfig.CurrentUser(path, cfg)
		if err != nil {
			return err
		}
		if user.ClientCertificate != pem || user.ClientKey != pem || len(user.ClientCertificateData) != 0 || len(user.ClientKeyData) != 0 {
			fmt.Fprintf(d.Out, "[kubelet-finalize] Pointing %q at the client certificate and key the kubelet renews\n", path)
			user.ClientCertificateData, user.ClientKeyData = nil, nil
			user.ClientCertificate, user.ClientKey = pem, pem
			changed = true
		}
	}
	if balancer {
		cluster, err := kubeconfig.CurrentCluster(path, cfg)
		if err != nil {
			return err
		}
		if cluster.Server != apilb.URL || cluster.TLSServerName != apilb.ServerName {
			fmt.Fprintf(d.Out, "[kubelet-finalize] Pointing %q at the node-local API server load balancer %s\n", path, apilb.URL)
			cluster.Server, cluster.TLSServerName = apilb.URL, apilb.ServerName
			changed = true
		}
	}
	if !changed {
		klog.V(1).Infof("[kubelet-finalize] %s is already as the kubelet needs it", path)
		return nil
	}
	if err := kubeconfig.WriteFile(path, cfg); err != nil {
		return err
	}
	if !d.DryRun {
		restart.start(func(w io.Writer) { kubelet.NewService(host, w).Restart(ctx) })
	}
	return nil
}

// backgroundRestart runs the kubelet's restart after kubelet-finalize
// while the phases after it go on: the running kubelet already uses its
// rotating certificate, the restart only makes it read kubelet.conf again,
// and the addons and the join command do not depend on it. On a systemd
// host the reload and restart take a few tenths of a second, which init
// would otherwise spend waiting. The phase's Finish waits for it, so the
// command never ends before the restart does, whatever happened meanwhile,
// and prints what went wrong with it.
type backgroundRestart struct {
	done chan struct{} // closed when the pending restart has ended; nil when none is pending
	out  bytes.Buffer  // its warnings
}

// start runs restart in the background, its messages kept for wait.
func (b *backgroundRestart) start(restart func(w io.Writer)) {
	b.wait(io.Discard) // never two at once (a repeated Run of the phase)
	b.out.Reset()
	done := make(chan struct{})
	b.done = done
	go func() {
		defer close(done)
		restart(&b.out)
	}()
}

// wait waits for the pending restart, if any, and copies its messages to w.
func (b *backgroundRestart) wait(w io.Writer) {
	if b.done == nil {
		return
	}
	<-b.done
	b.done = nil
	if _, err := w.Write(b.out.Bytes()); err != nil {
		klog.V(1).Infof("[kubelet-finalize] could not print the kubelet restart's messages: %v", err)
	}
}
