package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/phases/resetphases"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// resetOptions are the flags of "kubeadm reset" and its phases.
type resetOptions struct {
	configPath            string
	certDir               string
	cleanupTmpDir         bool
	cleanupNetwork        bool
	criSocket             string
	dryRun                bool
	force                 bool
	ignorePreflightErrors []string
	kubeconfigPath        string
	// clusterClient reads the cluster's configuration (nil:
	// apiclient.FromKubeconfig); tests hand in another.
	clusterClient func(kubeconfig string) (kubernetes.Interface, error)
}

func newResetCmd(streams Streams) *cobra.Command {
	o := &resetOptions{}
	var flags *pflag.FlagSet
	runner := &workflow.Runner[*resetphases.Data]{
		Phases: resetphases.Phases(),
		NewData: func(cmd *cobra.Command, args []string) (*resetphases.Data, error) {
			return o.data(cmd.Context(), flags, streams)
		},
		SkipPhases: func(d *resetphases.Data) []string { return d.Cfg.SkipPhases },
	}
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Undo what 'kubeadm init' or 'kubeadm join' set up on this machine",
		Long: `Undo, as far as possible, what "kubeadm init" or "kubeadm join" set up on this
machine: remove its etcd member from the cluster (on a control-plane node
with a stacked etcd) and the member's data, stop the kubelet, unmount what
the kubelet mounted, remove the pods' containers, and delete the
certificates, kubeconfig files, static Pod manifests and kubelet files.

The pod network's configuration and kube-proxy's packet-filter rules are
left in place unless --cleanup-network is given. Reset can be run again at
any time; it only removes what is left.`,
		Example: `  # Reset this node, asking first
  kubeadm reset

  # Reset without asking, also removing the CNI configuration and kube-proxy's rules
  kubeadm reset --force --cleanup-network`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runner.Run(cmd.Context(), args)
		},
	}
	flags = cmd.Flags()
	flags.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file (a ResetConfiguration).")
	flags.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder of the certificates to delete.")
	flags.BoolVar(&o.cleanupTmpDir, "cleanup-tmp-dir", false, `Also delete the contents of "/etc/kubernetes/tmp".`)
	flags.BoolVar(&o.cleanupNetwork, "cleanup-network", false, "Also delete the CNI configuration in /etc/cni/net.d and kube-proxy's packet-filter rules (KUBE-* iptables chains, IPVS tables).")
	flags.StringVar(&o.criSocket, "cri-socket", "", "Container runtime socket URL (default: detected).")
	flags.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; print what would be done.")
	flags.BoolVarP(&o.force, "force", "f", false, "Reset without asking for confirmation.")
	flags.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Preflight checks whose errors only warn, e.g. 'IsPrivilegedUser'; 'all' for every check.")
	flags.StringVar(&o.kubeconfigPath, "kubeconfig", "/etc/kubernetes/admin.conf", "Kubeconfig file used to reach the cluster (to remove this node's etcd member).")
	runner.BindToCommand(cmd)
	return cmd
}

// data builds the reset phases' shared data.
func (o *resetOptions) data(ctx context.Context, flags *pflag.FlagSet, streams Streams) (*resetphases.Data, error) {
	if err := checkMixedArguments(flags); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	env := hostEnvironment(streams.Err)
	docs := &config.Documents{Source: "flags", Reset: &v1beta4.ResetConfiguration{}}
	if o.configPath != "" {
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		warnUnused(env, d, v1beta4.KindResetConfiguration)
		if d.Reset == nil {
			d.Reset = &v1beta4.ResetConfiguration{}
		}
		docs = d
	} else {
		docs.Reset.CertificatesDir = o.certDir
		docs.Reset.CleanupTmpDir = o.cleanupTmpDir
		docs.Reset.CRISocket = o.criSocket
		docs.Reset.Force = o.force
		docs.Reset.DryRun = o.dryRun
	}
	// Reset must work on a machine without a container runtime too.
	cfg, err := env.ResetConfiguration(docs, config.DefaultOptions{})
	if err != nil {
		cfg, err = env.ResetConfiguration(docs, config.DefaultOptions{SkipCRISocket: true})
		if err != nil {
			return nil, err
		}
	}
	if flags.Changed("force") {
		cfg.Force = o.force
	}
	if flags.Changed("dry-run") {
		cfg.DryRun = o.dryRun
	}
	if err := validationError(docs.Source, validation.ValidateResetConfiguration(cfg)); err != nil {
		return nil, err
	}
	// Without --cert-dir or a file (whose certificatesDir, defaulted, is
	// used), the certificates are where the cluster's configuration says:
	// a cluster made with another certificatesDir keeps them there.
	// Upstream's reset reads that configuration too but then empties
	// /etc/kubernetes/pki anyway, leaving such a cluster's keys behind.
	if !flags.Changed("cert-dir") && o.configPath == "" {
		src := clusterSource{kubeconfig: o.kubeconfigPath, client: o.clusterClient, out: streams.Out, prefix: "reset"}
		if cluster := src.read(ctx); cluster != nil && cluster.Cluster != nil && cluster.Cluster.CertificatesDir != "" {
			cfg.CertificatesDir = cluster.Cluster.CertificatesDir
		}
	}
	ignored, err := mergeIgnoredPreflightErrors(o.ignorePreflightErrors, &cfg.IgnorePreflightErrors)
	if err != nil {
		return nil, err
	}
	return &resetphases.Data{
		Cfg:                   cfg,
		KubernetesDir:         resetphases.KubernetesDir,
		ApproverBinary:        cis.ApproverBinary,
		ManifestDir:           resetphases.ManifestsDir,
		KubeletDir:            resetphases.KubeletDir,
		CertDir:               cfg.CertificatesDir,
		KubeconfigPath:        o.kubeconfigPath,
		DryRun:                cfg.DryRun,
		Force:                 cfg.Force,
		CleanupNetwork:        o.cleanupNetwork,
		IgnorePreflightErrors: ignored,
		Out:                   streams.Out,
		Err:                   streams.Err,
		Confirm:               askYes(streams),
		Host:                  preflight.NewHost(),
		Service:               kubelet.OSHost{},
		Mounts:                resetphases.ProcMounts,
		Unmount:               unix.Unmount,
		DialCRI: func(ctx context.Context, endpoint string) (cri.Runtime, error) {
			return cri.Dial(ctx, endpoint, cri.Options{})
		},
		NewClient: func(path string) (kubernetes.Interface, error) {
			c, _, err := apiclient.FromKubeconfig(path, kubeadm.KubernetesAPICall(cfg.Timeouts))
			return c, err
		},
		Run: resetphases.RunProgram,
	}, nil
}

// askYes returns the confirmation prompt of reset and upgrade apply: it
// prints the question and reads one line of the input, whatever the input
// is (a terminal or a pipe, so that "yes | kubeadm reset" works as with
// upstream's); "y" or "yes", in any case, is a yes; an input that ends is a
// no.
func askYes(streams Streams) func(question string) bool {
	return func(question string) bool {
		fmt.Fprint(streams.Out, question)
		if streams.In == nil {
			return false
		}
		// A line longer than any answer is not a yes; an endless one is
		// not read to its end.
		line, _ := bufio.NewReader(io.LimitReader(streams.In, 1<<10)).ReadString('\n')
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes"
	}
}
