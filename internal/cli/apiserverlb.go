package cli

import (
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
)

// newAPIServerLBCmd is the node-local API server load balancer of the
// NodeLocalAPILoadBalancer feature gate, the program of the
// kube-apiserver-lb static Pod (docs/decisions/009). It is hidden: people
// do not run it by hand.
func newAPIServerLBCmd() *cobra.Command {
	o := apilb.Options{
		Listen:         apilb.ListenAddress,
		Kubeconfig:     "/etc/kubernetes/kubelet.conf",
		ClientCertFile: apilb.KubeletClientCertFile,
		UpstreamsFile:  filepath.Join("/etc/kubernetes", apilb.StateDir, apilb.UpstreamsFile),
		ProbeInterval:  apilb.DefaultProbeInterval,
		ProbeTimeout:   apilb.DefaultProbeTimeout,
		RequestTimeout: 30 * time.Second,
		Retry:          2 * time.Second,
	}
	cmd := &cobra.Command{
		Use:    "apiserver-lb",
		Short:  "Forward a loopback port to the cluster's healthy API servers (run by the kube-apiserver-lb static Pod)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return apilb.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", o.Listen, "Address and port to serve.")
	f.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig whose CA and client certificate are used to probe the API servers and watch their EndpointSlice.")
	f.StringVar(&o.ClientCertFile, "client-cert-file", o.ClientCertFile, "PEM file with the client certificate and key to use while it can be read, instead of the kubeconfig's (the kubelet's rotated certificate).")
	f.StringVar(&o.UpstreamsFile, "upstreams-file", o.UpstreamsFile, "File that keeps the last known API server addresses, one host:port a line.")
	f.StringVar(&o.Preferred, "prefer", "", "host:port of the API server to use while it is healthy (this node's own, on a control-plane node).")
	f.DurationVar(&o.ProbeInterval, "probe-interval", o.ProbeInterval, "How often each API server's /readyz is asked.")
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", o.ProbeTimeout, "How long a /readyz probe may take before the API server counts as down.")
	return cmd
}
