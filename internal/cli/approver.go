package cli

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/csrapprover"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// approverOptions are the flags of the hidden approver command.
type approverOptions struct {
	kubeconfig string
	resync     time.Duration
	reload     time.Duration
}

// newKubeletServingApproverCmd is the command the static Pod of the
// CISHardening profile runs on every control-plane node (see package
// csrapprover). It is hidden: nobody types it, kubeadm writes it into the
// Pod's manifest. It runs until SIGTERM or SIGINT.
func newKubeletServingApproverCmd(streams Streams) *cobra.Command {
	o := &approverOptions{}
	cmd := &cobra.Command{
		Use:    staticpod.ApproverCommand,
		Short:  "Approve the kubelets' serving certificate requests that pass kubeadm's checks (run by a static Pod)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			log := func(format string, args ...any) { klog.Infof(format, args...) }
			// Each request is bounded; a watch lasts one resync period.
			timeout := o.resync + time.Minute
			r := &csrapprover.Reloader{
				Approver: &csrapprover.Approver{Resync: o.resync, Log: log},
				Path:     o.kubeconfig,
				Interval: o.reload,
				Connect: func(data []byte) (csrapprover.API, error) {
					kc, err := kubeconfig.Parse(o.kubeconfig, data)
					if err != nil {
						return nil, err
					}
					c, err := apiclient.FromConfig(kc, timeout)
					if err != nil {
						return nil, err
					}
					if cluster, err := kubeconfig.CurrentCluster(o.kubeconfig, kc); err == nil {
						fmt.Fprintf(streams.Err, "Approving the kubelets' serving certificate requests through %s\n", cluster.Server)
					}
					return csrapprover.NewAPI(c), nil
				},
			}
			if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", cis.ApproverKubeconfig(staticpod.KubernetesDir), "Kubeconfig file of the approver's own identity.")
	f.DurationVar(&o.resync, "resync", 30*time.Second, "How often every pending request is looked at again.")
	f.DurationVar(&o.reload, "reload-interval", csrapprover.DefaultReloadInterval, "How often the kubeconfig file is read again; a changed one is used at once.")
	return cmd
}
