package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/utils/ptr"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/phases/upgradephases"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// upgradeOptions are the flags of the upgrade commands.
type upgradeOptions struct {
	// phaseCommand is set when an "upgrade apply|node phase ..." command
	// runs rather than the whole upgrade.
	phaseCommand          bool
	configPath            string
	kubeconfigPath        string
	patchesDir            string
	dryRun, force, yes    bool
	etcdUpgrade           bool
	certRenewal           bool
	allowExperimental     bool
	allowRC               bool
	printConfig           bool
	ignorePreflightErrors []string
	output                string
	allowMissingKeys      *bool
	contextLines          int
}

func newUpgradeCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Upgrade the cluster to a newer Kubernetes version",
		Long: `Upgrade a cluster kubeadm made: "plan" shows what an upgrade would change,
"apply" upgrades the control plane of the first control-plane node (and the
cluster's configuration and addons), "node" upgrades every other node, and
"diff" shows how the static Pod manifests would change.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	cmd.AddCommand(newUpgradePlanCmd(streams), newUpgradeApplyCmd(streams), newUpgradeNodeCmd(streams), newUpgradeDiffCmd(streams))
	return cmd
}

func addUpgradeCommonFlags(f *pflag.FlagSet, o *upgradeOptions) {
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file (an UpgradeConfiguration).")
	f.StringVar(&o.kubeconfigPath, "kubeconfig", defaultKubeconfig, "Kubeconfig file used to reach the cluster.")
}

// addUpgradeNodeFlags adds the flags of the commands that upgrade a node
// (apply and node).
func addUpgradeNodeFlags(f *pflag.FlagSet, o *upgradeOptions) {
	f.BoolVar(&o.certRenewal, "certificate-renewal", true, "Renew the certificates of the components the upgrade restarts.")
	f.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; print what would be done.")
	f.BoolVar(&o.etcdUpgrade, "etcd-upgrade", true, "Upgrade etcd too.")
	f.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Checks whose errors only warn; 'all' for every check.")
	f.StringVar(&o.patchesDir, "patches", "", "Folder of patches for the manifests, the kubelet configuration and the CoreDNS Deployment (named as for init).")
}

func newUpgradePlanCmd(streams Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "plan [version]",
		Short: "Show the versions the cluster runs and what an upgrade would run",
		Long: `Read the cluster's configuration, list the version every component runs
now and the one it would run after "kubeadm upgrade apply", and check the
version skew policy, after the same cluster health checks as "kubeadm
upgrade apply". Without a version the target is this kubeadm's own
version (no release lookup on the internet is needed).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runPlan(cmd.Context(), cmd.Flags(), streams, args)
		},
	}
	f := cmd.Flags()
	addUpgradeCommonFlags(f, o)
	f.BoolVar(&o.allowExperimental, "allow-experimental-upgrades", false, "Also consider alpha, beta and release-candidate versions.")
	f.BoolVar(&o.allowRC, "allow-release-candidate-upgrades", false, "Also consider release-candidate versions.")
	f.BoolVar(&o.etcdUpgrade, "etcd-upgrade", true, "Include etcd in the plan.")
	f.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Checks whose errors only warn; 'all' for every check.")
	f.BoolVar(&o.printConfig, "print-config", false, "Print the configuration the upgrade would use.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text|"+output.Formats+".")
	o.allowMissingKeys = addPrinterFlags(f)
	return cmd
}

func newUpgradeApplyCmd(streams Streams) *cobra.Command {
	o := &upgradeOptions{}
	var flags *pflag.FlagSet
	var target string
	runner := &workflow.Runner[*upgradephases.Data]{
		Phases: upgradephases.ApplyPhases(),
		NewData: func(cmd *cobra.Command, args []string) (*upgradephases.Data, error) {
			if len(args) > 0 {
				target = args[0]
			}
			o.phaseCommand = cmd.Name() != "apply"
			return o.data(cmd.Context(), flags, streams, true, target)
		},
		SkipPhases: func(d *upgradephases.Data) []string { return d.Upgrade.Apply.SkipPhases },
	}
	cmd := &cobra.Command{
		Use:   "apply [version]",
		Short: "Upgrade the control plane of this node, and the cluster's configuration and addons",
		Long: `Upgrade the first control-plane node to a new Kubernetes version: check
this machine (privileges, kernel and cgroups) and that the cluster is healthy (a Job runs to completion, every control-plane
node is Ready, this node has its static Pod manifests), pull the new images,
then for etcd (when its version changes), kube-apiserver,
kube-controller-manager and kube-scheduler in turn back up the static Pod
manifest, write the new one and wait for the kubelet to run it healthy. When
a component does not come up, every manifest changed so far is restored as
it was and the command fails naming the component. Before etcd is touched its
data folder is copied and a snapshot is taken through its API. Then the
cluster's configuration, this node's kubelet configuration, the bootstrap
token rules and (once every control-plane node is upgraded) the addons are
refreshed.`,
		Example: `  # Upgrade the control plane to v1.36.3 without asking
  kubeadm upgrade apply v1.36.3 --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runner.Run(cmd.Context(), args)
		},
	}
	flags = cmd.Flags()
	addUpgradeCommonFlags(flags, o)
	flags.BoolVar(&o.allowExperimental, "allow-experimental-upgrades", false, "Allow alpha, beta and release-candidate versions.")
	flags.BoolVar(&o.allowRC, "allow-release-candidate-upgrades", false, "Allow release-candidate versions.")
	addUpgradeNodeFlags(flags, o)
	flags.BoolVarP(&o.force, "force", "f", false, "Upgrade even when the version skew policy objects (where it may be overridden); implies --yes.")
	flags.BoolVar(&o.printConfig, "print-config", false, "Print the configuration the upgrade uses.")
	flags.BoolVarP(&o.yes, "yes", "y", false, "Upgrade without asking for confirmation.")
	runner.BindToCommand(cmd)
	return cmd
}

func newUpgradeNodeCmd(streams Streams) *cobra.Command {
	o := &upgradeOptions{}
	var flags *pflag.FlagSet
	runner := &workflow.Runner[*upgradephases.Data]{
		Phases: upgradephases.NodePhases(),
		NewData: func(cmd *cobra.Command, args []string) (*upgradephases.Data, error) {
			o.phaseCommand = cmd.Name() != "node"
			return o.data(cmd.Context(), flags, streams, false, "")
		},
		SkipPhases: func(d *upgradephases.Data) []string { return d.Upgrade.Node.SkipPhases },
	}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Upgrade this node to the version the cluster's configuration names",
		Long: `Upgrade a node after "kubeadm upgrade apply" ran on the first control-plane
node: after the checks of this machine (privileges, kernel and cgroups), on
a control-plane node, its static Pods as apply does (with the same
backup and rollback); on every node, the kubelet's configuration. The last
control-plane node upgraded also upgrades the addons.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runner.Run(cmd.Context(), args)
		},
	}
	flags = cmd.Flags()
	addUpgradeCommonFlags(flags, o)
	addUpgradeNodeFlags(flags, o)
	runner.BindToCommand(cmd)
	return cmd
}

func newUpgradeDiffCmd(streams Streams) *cobra.Command {
	o := &upgradeOptions{}
	cmd := &cobra.Command{
		Use:   "diff [version]",
		Short: "Show how an upgrade would change this node's static Pod manifests",
		Long: `Print, as unified diffs, how "kubeadm upgrade apply" to the version given
(this kubeadm's own by default) would change the manifests of kube-apiserver,
kube-controller-manager and kube-scheduler on this node, or their systemd
units on a node whose control plane runs as host processes (the target's
programs must then be in the PATH). Nothing is changed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runDiff(cmd.Context(), cmd.Flags(), streams, args)
		},
	}
	addUpgradeCommonFlags(cmd.Flags(), o)
	cmd.Flags().IntVarP(&o.contextLines, "context-lines", "c", 3, "Lines of context around each change.")
	return cmd
}

// data reads the configuration, the cluster's stored configuration and
// this node's files, and builds what the upgrade phases share. apply is
// true for "upgrade apply" (target is its argument, "" for this kubeadm's
// version), false for "upgrade node" (the cluster's version).
func (o *upgradeOptions) data(ctx context.Context, flags *pflag.FlagSet, streams Streams, apply bool, target string) (*upgradephases.Data, error) {
	env := hostEnvironment(streams.Err)
	up, err := o.upgradeConfig(env, flags)
	if err != nil {
		return nil, err
	}
	d := &upgradephases.Data{
		Apply:         apply,
		Upgrade:       up,
		KubernetesDir: initphases.KubernetesDir,
		ManifestDir:   initphases.ManifestsDir,
		KubeletDir:    initphases.KubeletDir,
		Out:           streams.Out,
		Err:           streams.Err,
		Confirm:       askYes(streams),
		Now:           time.Now,
		Host:          preflight.NewHost(),
		Service:       kubelet.OSHost{},
		DialCRI: func(ctx context.Context, endpoint string) (cri.Runtime, error) {
			return cri.Dial(ctx, endpoint, cri.Options{})
		},
		// Before etcd changes, a snapshot as "kubeadm etcd snapshot save" takes.
		EtcdSnapshot: func(ctx context.Context, d *upgradephases.Data, path string) error {
			return etcd.HostNode(d.CertDir).SaveSnapshot(ctx, path, d.Out)
		},
		EtcdMembers: func(ctx context.Context, d *upgradephases.Data) (int, error) {
			ms, err := etcd.HostNode(d.CertDir).Members(ctx)
			return len(ms), err
		},
	}
	var ignoredFromConfig *[]string
	if apply {
		a := up.Apply
		d.DryRun, d.Force, d.EtcdUpgrade, d.CertRenewal = ptr.Deref(a.DryRun, false), ptr.Deref(a.ForceUpgrade, false), ptr.Deref(a.EtcdUpgrade, true), ptr.Deref(a.CertificateRenewal, true)
		d.ImagePullPolicy, d.ImagePullSerial = string(a.ImagePullPolicy), ptr.Deref(a.ImagePullSerial, true)
		if a.Patches != nil {
			d.PatchesDir = a.Patches.Directory
		}
		ignoredFromConfig = &up.Apply.IgnorePreflightErrors
		var args []string
		if target != "" {
			args = []string{target}
		}
		// As upstream's, apply changes nothing without being told the
		// version (diff and plan take this kubeadm's or look it up).
		if target == "" && a.KubernetesVersion == "" {
			return nil, errors.New("upgrade apply needs the version to upgrade to: give it as an argument (kubeadm upgrade apply v1.36.3) or as apply.kubernetesVersion in the --config file")
		}
		if target, err = targetVersion(ctx, env, args, a.KubernetesVersion); err != nil {
			return nil, err
		}
		o.allowExperimental = o.allowExperimental || ptr.Deref(a.AllowExperimentalUpgrades, false)
		o.allowRC = o.allowRC || ptr.Deref(a.AllowRCUpgrades, false)
		o.printConfig = o.printConfig || ptr.Deref(a.PrintConfig, false)
	} else {
		n := up.Node
		d.DryRun, d.EtcdUpgrade, d.CertRenewal = ptr.Deref(n.DryRun, false), ptr.Deref(n.EtcdUpgrade, true), ptr.Deref(n.CertificateRenewal, true)
		d.ImagePullPolicy, d.ImagePullSerial = string(n.ImagePullPolicy), ptr.Deref(n.ImagePullSerial, true)
		if n.Patches != nil {
			d.PatchesDir = n.Patches.Directory
		}
		ignoredFromConfig = &up.Node.IgnorePreflightErrors
	}
	// Flags given on the command line win over the file.
	set := func(name string, dst *bool, v bool) {
		if flags.Changed(name) {
			*dst = v
		}
	}
	set("dry-run", &d.DryRun, o.dryRun)
	set("force", &d.Force, o.force)
	set("etcd-upgrade", &d.EtcdUpgrade, o.etcdUpgrade)
	set("certificate-renewal", &d.CertRenewal, o.certRenewal)
	d.Yes = o.yes
	if flags.Changed("patches") {
		d.PatchesDir = o.patchesDir
	}
	if err := checkPatches(d.PatchesDir); err != nil {
		return nil, err
	}
	if d.IgnorePreflightErrors, err = mergeIgnoredPreflightErrors(o.ignorePreflightErrors, ignoredFromConfig); err != nil {
		return nil, err
	}

	d.KubeconfigPath = o.kubeconfigPath
	if !apply && !flags.Changed("kubeconfig") {
		// A worker has no admin.conf: its kubelet's credentials may read
		// the cluster's configuration.
		if _, err := os.Stat(d.KubeconfigPath); err != nil {
			d.KubeconfigPath = filepath.Join(d.KubernetesDir, "kubelet.conf")
		}
	}
	c, _, err := apiclient.FromKubeconfig(d.KubeconfigPath, kubeadm.KubernetesAPICall(up.Timeouts))
	if err != nil {
		return nil, err
	}
	d.Client = c
	if d.DryRun {
		d.Client = apiclient.DryRunClient(d.Out, c)
		prefix := upgradeNodeDryRunPrefix
		if apply {
			prefix = upgradeApplyDryRunPrefix
		}
		if d.DryRunDir, err = makeDryRunDir(upgradeDryRunDirEnv, dryRunParent, prefix, streams.Err); err != nil {
			return nil, err
		}
	}
	err = d.Load(ctx, upgradephases.LoadOptions{
		Env: env, Client: c, Target: target,
		AllowExperimental: o.allowExperimental, AllowRC: o.allowRC, PrintConfig: o.printConfig,
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// upgradeConfig reads --config (an UpgradeConfiguration), defaulted and
// validated.
func (o *upgradeOptions) upgradeConfig(env config.Environment, flags *pflag.FlagSet) (*kubeadm.UpgradeConfiguration, error) {
	// Upstream's upgrade phase commands take any flag next to --config.
	if !o.phaseCommand {
		if err := checkMixedArguments(flags); err != nil {
			return nil, err
		}
	}
	docs := &config.Documents{Source: "flags"}
	if o.configPath != "" {
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		warnUnused(env, d, v1beta4.KindUpgradeConfiguration)
		docs = d
	}
	up := env.UpgradeConfiguration(docs)
	if err := validationError(docs.Source, validation.ValidateUpgradeConfiguration(up)); err != nil {
		return nil, err
	}
	return up, nil
}

func (o *upgradeOptions) runPlan(ctx context.Context, flags *pflag.FlagSet, streams Streams, args []string) error {
	printer, err := newPrinter(o.output, *o.allowMissingKeys)
	if err != nil {
		return err
	}
	// Progress goes to standard error when standard output carries a document.
	progress := streams.Out
	if printer != nil {
		progress = streams.Err
	}
	env := hostEnvironment(streams.Err)
	up, err := o.upgradeConfig(env, flags)
	if err != nil {
		return err
	}
	r, err := o.planRequest(flags, up, args)
	if err != nil {
		return err
	}
	r.Env, r.Printer, r.Out, r.Progress, r.Err = env, printer, streams.Out, progress, streams.Err
	r.ManifestDir, r.Host = initphases.ManifestsDir, preflight.NewHost()
	r.CheckpointDir = selfhosting.CheckpointDir(initphases.KubernetesDir)
	return upgrade.RunPlan(ctx, r)
}

// planRequest is what the plan was asked: the flags merged with the
// UpgradeConfiguration's plan settings (upstream refuses flags next to
// --config, so at most one of the two says anything).
func (o *upgradeOptions) planRequest(flags *pflag.FlagSet, up *kubeadm.UpgradeConfiguration, args []string) (upgrade.PlanRequest, error) {
	p := up.Plan
	r := upgrade.PlanRequest{
		Upgrade:           up,
		Asked:             p.KubernetesVersion,
		KubeconfigPath:    o.kubeconfigPath,
		AllowExperimental: o.allowExperimental || ptr.Deref(p.AllowExperimentalUpgrades, false),
		AllowRC:           o.allowRC || ptr.Deref(p.AllowRCUpgrades, false),
		EtcdUpgrade:       ptr.Deref(p.EtcdUpgrade, true) && (!flags.Changed("etcd-upgrade") || o.etcdUpgrade),
		PrintConfig:       o.printConfig || ptr.Deref(p.PrintConfig, false),
	}
	if len(args) > 0 {
		r.Asked = args[0]
	}
	var err error
	r.Ignored, err = mergeIgnoredPreflightErrors(o.ignorePreflightErrors, &up.Plan.IgnorePreflightErrors)
	return r, err
}

func (o *upgradeOptions) runDiff(ctx context.Context, flags *pflag.FlagSet, streams Streams, args []string) error {
	env := hostEnvironment(streams.Err)
	up, err := o.upgradeConfig(env, flags)
	if err != nil {
		return err
	}
	target, err := targetVersion(ctx, env, args, up.Diff.KubernetesVersion)
	if err != nil {
		return err
	}
	if !flags.Changed("context-lines") && up.Diff.DiffContextLines > 0 {
		o.contextLines = up.Diff.DiffContextLines
	}
	c, _, err := apiclient.FromKubeconfig(o.kubeconfigPath, kubeadm.KubernetesAPICall(up.Timeouts))
	if err != nil {
		return err
	}
	return upgradephases.Diff(ctx, upgradephases.DiffRequest{
		Env: env, Upgrade: up, Client: c, Target: target, ContextLines: o.contextLines, Out: streams.Out, Err: streams.Err,
	})
}

// targetVersion is the version an upgrade command aims at: its argument,
// else the one its configuration names, else this kubeadm's own; a label
// such as "stable-1.36" is resolved.
func targetVersion(ctx context.Context, env config.Environment, args []string, fromConfig string) (string, error) {
	target := fromConfig
	if len(args) > 0 {
		target = args[0]
	}
	if target == "" {
		target = version.KubernetesVersion
	}
	return env.ResolveVersion(ctx, target)
}
