package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// initOptions are the flags of "kubeadm init" and its phases.
type initOptions struct {
	configPath              string
	advertiseAddress        string
	bindPort                int32
	certSANs                []string
	certDir                 string
	certificateKey          string
	controlPlaneEndpoint    string
	criSocket               string
	dryRun                  bool
	featureGates            string
	ignorePreflightErrors   []string
	imageRepository         string
	kubernetesVersion       string
	nodeName                string
	patchesDir              string
	podSubnet               string
	serviceSubnet           string
	dnsDomain               string
	skipCertificateKeyPrint bool
	skipTokenPrint          bool
	token                   string
	tokenTTL                time.Duration
	uploadCerts             bool
	kubeconfigPath          string
	phaseFlags              *pflag.FlagSet

	// Deprecated phase-only flags (hidden, as upstream's): extra command
	// line flags of the control-plane components, name=value pairs.
	apiServerExtraArgs         []string
	controllerManagerExtraArgs []string
	schedulerExtraArgs         []string
}

// Names of the deprecated extra-args flags of the control-plane phases.
const (
	apiServerExtraArgsFlag         = "apiserver-extra-args"
	controllerManagerExtraArgsFlag = "controller-manager-extra-args"
	schedulerExtraArgsFlag         = "scheduler-extra-args"
)

// kubeconfigPathIfSet is --kubeconfig when the user gave it; otherwise ""
// so the API phases use admin.conf wherever this run writes kubeconfigs.
func (o *initOptions) kubeconfigPathIfSet() string {
	if o.phaseFlags != nil && o.phaseFlags.Changed("kubeconfig") {
		return o.kubeconfigPath
	}
	return ""
}

func newInitCmd(streams Streams) *cobra.Command {
	o := &initOptions{}
	var flags *pflag.FlagSet
	runner := &workflow.Runner[*initphases.Data]{
		Phases: initphases.Phases(),
		NewData: func(cmd *cobra.Command, args []string) (*initphases.Data, error) {
			return o.data(cmd.Context(), flags, streams)
		},
		SkipPhases: func(d *initphases.Data) []string { return d.Cfg.SkipPhases },
		Plan:       initphases.PlanKubeletHeadStart,
	}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Set up the first control-plane node of a new cluster",
		Long: `Turn this machine into the first control-plane node of a new Kubernetes
cluster: check the machine, create the cluster's certificate authorities and
certificates, the kubeconfig files of the control-plane components, the static
pod manifests of etcd and the control plane, and the kubelet's configuration.`,
		Example: `  # Use the defaults (or run "kubeadm config print init-defaults" for a file to edit)
  kubeadm init

  # Only create the certificates
  kubeadm init phase certs all --config kubeadm.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := runner.Data(args)
			if err != nil {
				return err
			}
			// As upstream's init (not its phase commands) does.
			fmt.Fprintf(streams.Out, "[init] Using Kubernetes version: %s\n", data.Cfg.KubernetesVersion)
			return runner.Run(cmd.Context(), args)
		},
	}
	flags = cmd.Flags()
	o.addFlags(flags)
	// Flags only the phase commands offer.
	phaseOnly := pflag.NewFlagSet("init-phases", pflag.ContinueOnError)
	o.phaseFlags = phaseOnly
	phaseOnly.StringVar(&o.kubeconfigPath, "kubeconfig", filepath.Join(initphases.KubernetesDir, "admin.conf"), "Kubeconfig file used to reach the cluster.")
	o.addExtraArgsFlags(phaseOnly)
	runner.AdditionalFlags = phaseOnly
	runner.BindToCommand(cmd)
	return cmd
}

func (o *initOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.advertiseAddress, "apiserver-advertise-address", "", "Address the API server advertises it listens on (default: the address of the default-route interface).")
	f.Int32Var(&o.bindPort, "apiserver-bind-port", v1beta4.DefaultAPIBindPort, "Port the API server listens on.")
	f.StringSliceVar(&o.certSANs, "apiserver-cert-extra-sans", nil, "Extra Subject Alternative Names (IPs or DNS names) for the API server's serving certificate.")
	f.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder holding the certificates and keys.")
	f.StringVar(&o.certificateKey, "certificate-key", "", "Hex-encoded AES key that encrypts the control-plane certificates uploaded to the kubeadm-certs Secret.")
	f.StringVar(&o.controlPlaneEndpoint, "control-plane-endpoint", "", "Stable address (IP or DNS name, optional port) for all control-plane nodes.")
	f.StringVar(&o.criSocket, "cri-socket", "", "Container runtime socket URL (default: detected).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; write into a temporary folder and print what would be done.")
	f.StringVar(&o.featureGates, "feature-gates", "", "Comma-separated name=true|false pairs of kubeadm feature gates.")
	f.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Preflight checks whose errors only warn, e.g. 'IsPrivilegedUser,Swap'; 'all' for every check.")
	f.StringVar(&o.imageRepository, "image-repository", v1beta4.DefaultImageRepository, "Registry the control-plane images come from.")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "stable-1", "Kubernetes version (or release label) of the control plane.")
	f.StringVar(&o.nodeName, "node-name", "", "Name of this node (default: the host name).")
	f.StringVar(&o.patchesDir, "patches", "", `Folder of patch files named "target[suffix][+patchtype].extension" (targets: kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kubeletconfiguration, corednsdeployment, kubeproxydaemonset).`)
	f.StringVar(&o.podSubnet, "pod-network-cidr", "", "Pod address range(s); the controller manager gives each node a slice of it.")
	f.StringVar(&o.serviceSubnet, "service-cidr", v1beta4.DefaultServiceSubnet, "Service address range(s).")
	f.StringVar(&o.dnsDomain, "service-dns-domain", v1beta4.DefaultDNSDomain, "DNS domain of the cluster's Services.")
	f.BoolVar(&o.skipCertificateKeyPrint, "skip-certificate-key-print", false, "Do not print the key that encrypts the uploaded control-plane certificates.")
	f.BoolVar(&o.skipTokenPrint, "skip-token-print", false, "Do not print the default bootstrap token.")
	f.StringVar(&o.token, "token", "", "Bootstrap token to create, of the form [a-z0-9]{6}.[a-z0-9]{16} (default: generated).")
	f.DurationVar(&o.tokenTTL, "token-ttl", v1beta4.DefaultTokenTTL, "Lifetime of the bootstrap token before it is deleted; 0 means it never expires.")
	f.BoolVar(&o.uploadCerts, "upload-certs", false, "Upload the control-plane certificates to the kubeadm-certs Secret.")
}

// extraArgsFlag is one of the control-plane phases' flags that upstream
// kept, hidden and deprecated, from before kubeadm.k8s.io/v1beta4 made
// extraArgs a list: comma-separated name=value pairs, appended in order
// (repeats included) to the component's extraArgs.
type extraArgsFlag struct {
	name      string
	component string // the program
	field     string // its ClusterConfiguration field
	target    *[]string
	// dest is the field's extraArgs in c.
	dest func(c *v1beta4.ClusterConfiguration) *[]v1beta4.Arg
}

func (o *initOptions) extraArgsFlags() []extraArgsFlag {
	return []extraArgsFlag{
		{apiServerExtraArgsFlag, "kube-apiserver", "apiServer", &o.apiServerExtraArgs,
			func(c *v1beta4.ClusterConfiguration) *[]v1beta4.Arg { return &c.APIServer.ExtraArgs }},
		{controllerManagerExtraArgsFlag, "kube-controller-manager", "controllerManager", &o.controllerManagerExtraArgs,
			func(c *v1beta4.ClusterConfiguration) *[]v1beta4.Arg { return &c.ControllerManager.ExtraArgs }},
		{schedulerExtraArgsFlag, "kube-scheduler", "scheduler", &o.schedulerExtraArgs,
			func(c *v1beta4.ClusterConfiguration) *[]v1beta4.Arg { return &c.Scheduler.ExtraArgs }},
	}
}

// addExtraArgsFlags adds the extra-args flags, hidden. They are not marked
// deprecated for pflag, which would print the notice on stdout where
// upstream's goes to stderr: warnDeprecated prints it.
func (o *initOptions) addExtraArgsFlags(f *pflag.FlagSet) {
	for _, x := range o.extraArgsFlags() {
		f.StringSliceVar(x.target, x.name, nil,
			fmt.Sprintf("Extra flags of %s, as <flag name>=<value> pairs.", x.component))
		_ = f.MarkHidden(x.name)
	}
}

// warnDeprecated tells on w of each deprecated flag that was given.
func (o *initOptions) warnDeprecated(w io.Writer) {
	for _, x := range o.extraArgsFlags() {
		if f := o.phaseFlags.Lookup(x.name); f != nil && f.Changed {
			fmt.Fprintf(w, "Flag --%s has been deprecated: set the %s flags in ClusterConfiguration.%s.extraArgs instead; this flag will go away\n",
				x.name, x.component, x.field)
		}
	}
}

// extraArgs turns the pairs of an extra-args flag into extraArgs, in the
// order given. Like upstream's, a pair is refused unless it splits into
// exactly a name and a value at "="; the name is checked by validation.
func (x extraArgsFlag) extraArgs(flags *pflag.FlagSet) ([]v1beta4.Arg, error) {
	f := flags.Lookup(x.name)
	if f == nil || !f.Changed {
		return nil, nil
	}
	if len(*x.target) == 0 {
		return nil, fmt.Errorf("invalid argument \"\" for \"--%s\" flag: give <flag name>=<value> pairs separated by commas", x.name)
	}
	var out []v1beta4.Arg
	for _, pair := range *x.target {
		parts := strings.Split(pair, "=")
		if len(parts) != 2 {
			return nil, fmt.Errorf("invalid argument for \"--%s\" flag: %q is not a <flag name>=<value> pair", x.name, pair)
		}
		out = append(out, v1beta4.Arg{Name: parts[0], Value: parts[1]})
	}
	return out, nil
}

// data builds the phases' shared data: the configuration from the file or
// the flags, defaulted and validated, and where output goes.
func (o *initOptions) data(ctx context.Context, flags *pflag.FlagSet, streams Streams) (*initphases.Data, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	o.warnDeprecated(streams.Err)
	if err := checkMixedArguments(flags, o.phaseFlags); err != nil {
		return nil, err
	}
	env := hostEnvironment(streams.Err)
	var docs *config.Documents
	if o.configPath != "" {
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		docs = d
	} else {
		d, err := o.documentsFromFlags(flags)
		if err != nil {
			return nil, err
		}
		docs = d
	}
	if flags.Changed("node-name") {
		if docs.Init == nil {
			docs.Init = &v1beta4.InitConfiguration{}
		}
		docs.Init.NodeRegistration.Name = o.nodeName
	}
	if flags.Changed("dry-run") && docs.Init != nil {
		docs.Init.DryRun = o.dryRun
	}
	cfg, err := loadInitConfig(ctx, env, docs, config.DefaultOptions{})
	if err != nil {
		return nil, err
	}
	if flags.Changed("dry-run") {
		cfg.DryRun = o.dryRun
	}
	ignored, err := mergeIgnoredPreflightErrors(o.ignorePreflightErrors, &cfg.NodeRegistration.IgnorePreflightErrors)
	if err != nil {
		return nil, err
	}

	d := &initphases.Data{
		Cfg:                     cfg,
		CertDir:                 cfg.CertificatesDir,
		KubeconfigDir:           initphases.KubernetesDir,
		ManifestDir:             initphases.ManifestsDir,
		KubeletDir:              initphases.KubeletDir,
		KubeconfigPath:          o.kubeconfigPathIfSet(),
		DryRun:                  cfg.DryRun,
		IgnorePreflightErrors:   ignored,
		UploadCerts:             o.uploadCerts,
		SkipCertificateKeyPrint: o.skipCertificateKeyPrint,
		SkipTokenPrint:          o.skipTokenPrint,
		Out:                     streams.Out,
		Err:                     streams.Err,
		Now:                     time.Now,
	}
	if cfg.Patches != nil {
		d.PatchesDir = cfg.Patches.Directory
	}
	if flags.Changed("patches") {
		d.PatchesDir = o.patchesDir
	}
	if err := checkPatches(d.PatchesDir); err != nil {
		return nil, err
	}
	if err := initphases.CheckUploadCerts(d); err != nil {
		return nil, err
	}
	if d.DryRun {
		dir, err := makeDryRunDir(initDryRunDirEnv, dryRunParent, initDryRunPrefix, streams.Err)
		if err != nil {
			return nil, err
		}
		d.DryRunDir = dir
		d.CertDir, d.KubeconfigDir, d.ManifestDir, d.KubeletDir = dir, dir, dir, dir
	}
	// With an external CA kubeadm cannot create kubeconfig files, so they
	// must all be there and trust that CA before any phase runs.
	if err := initphases.CheckExternalCAKubeconfigs(d, d.KubeconfigDir); err != nil {
		return nil, err
	}
	return d, nil
}

// documentsFromFlags expresses the init flags as configuration documents,
// so they go through the same defaulting and validation as a file.
func (o *initOptions) documentsFromFlags(flags *pflag.FlagSet) (*config.Documents, error) {
	init := &v1beta4.InitConfiguration{}
	cluster := &v1beta4.ClusterConfiguration{
		KubernetesVersion:    o.kubernetesVersion,
		ImageRepository:      o.imageRepository,
		CertificatesDir:      o.certDir,
		ControlPlaneEndpoint: o.controlPlaneEndpoint,
		Networking: v1beta4.Networking{
			ServiceSubnet: o.serviceSubnet,
			PodSubnet:     o.podSubnet,
			DNSDomain:     o.dnsDomain,
		},
	}
	cluster.APIServer.CertSANs = o.certSANs
	for _, x := range o.extraArgsFlags() {
		args, err := x.extraArgs(o.phaseFlags)
		if err != nil {
			return nil, err
		}
		*x.dest(cluster) = args
	}
	gates, err := parseFeatureGates(o.featureGates)
	if err != nil {
		return nil, exitcode.ValidationError(err)
	}
	cluster.FeatureGates = gates
	init.LocalAPIEndpoint = v1beta4.APIEndpoint{AdvertiseAddress: o.advertiseAddress, BindPort: o.bindPort}
	init.NodeRegistration.Name = o.nodeName
	init.NodeRegistration.CRISocket = o.criSocket
	init.CertificateKey = o.certificateKey
	init.DryRun = o.dryRun
	if o.patchesDir != "" {
		init.Patches = &v1beta4.Patches{Directory: o.patchesDir}
	}
	tok := v1beta4.BootstrapToken{TTL: &metav1.Duration{Duration: o.tokenTTL}}
	if o.token != "" {
		t, err := v1beta4.ParseBootstrapTokenString(o.token)
		if err != nil {
			return nil, exitcode.ValidationError(fmt.Errorf("--token: %w", err))
		}
		tok.Token = t
	}
	init.BootstrapTokens = []v1beta4.BootstrapToken{tok}
	return &config.Documents{Source: "flags", Init: init, Cluster: cluster}, nil
}
