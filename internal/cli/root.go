package cli

import (
	"flag"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/redact"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Streams are the standard streams a command reads from and writes to.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Run builds the command tree and executes it with args.
func Run(args []string, streams Streams) error {
	root := NewRootCmd(streams)
	root.SetArgs(args)
	return root.Execute()
}

// NewRootCmd returns the top-level kubeadm command with every sub-command.
func NewRootCmd(streams Streams) *cobra.Command {
	var rootfs string
	cmd := &cobra.Command{
		Use:   "kubeadm",
		Short: "kubeadm: set up a secure Kubernetes cluster",
		Long: `kubeadm sets up a minimum viable, secure Kubernetes cluster.

On the first control-plane machine run "kubeadm init". On every other machine,
run the "kubeadm join" command that init prints. The same configuration files
(kubeadm.k8s.io/v1beta4) and flags as the upstream kubeadm are understood.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if rootfs != "" {
				return chroot(rootfs)
			}
			return nil
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.Err)

	flags := cmd.PersistentFlags()
	flags.StringVar(&rootfs, "rootfs", "", "[EXPERIMENTAL] Path to the host's real root filesystem; kubeadm chroots into it before doing anything.")
	addKlogFlags(cmd)

	cmd.AddCommand(
		newVersionCmd(streams),
		newCompletionCmd(streams, cmd),
		newConfigCmd(streams),
		newTokenCmd(streams),
		newInitCmd(streams),
		newJoinCmd(streams),
		newResetCmd(streams),
		newUpgradeCmd(streams),
		newKubeconfigCmd(streams),
		newCertsCmd(streams),
		newEtcdCmd(streams, etcd.HostNode(v1beta4.DefaultCertificatesDir)),
		newAPIServerLBCmd(),
		newKubeletServingApproverCmd(streams),
		newAlphaCmd(streams),
	)
	return cmd
}

// addKlogFlags exposes klog's verbosity and output flags on cmd, and makes
// sure that no secret reaches klog's output at any verbosity (client-go
// logs request and answer bodies from -v=8 on).
func addKlogFlags(cmd *cobra.Command) {
	redact.InstallKlogFilter()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for _, name := range []string{"v", "vmodule"} {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		cmd.PersistentFlags().AddGoFlag(f)
	}
	if f := cmd.PersistentFlags().Lookup("v"); f != nil {
		f.Shorthand = "v"
	}
}
