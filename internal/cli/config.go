package cli

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

const defaultKubeconfig = "/etc/kubernetes/admin.conf"

func newConfigCmd(streams Streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with kubeadm configuration files",
		Long: `Print, migrate and validate kubeadm configuration files, and list or pull
the images a configuration needs.

A running cluster keeps the configuration it was created with in the
"kubeadm-config" ConfigMap of the kube-system namespace; "kubeadm upgrade"
reads it from there.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", defaultKubeconfig, "Kubeconfig file used to reach the cluster.")
	cmd.AddCommand(
		newConfigPrintCmd(streams),
		newConfigMigrateCmd(streams),
		newConfigValidateCmd(streams),
		newConfigImagesCmd(streams),
	)
	return cmd
}

// ---- config print ----

// Placeholders "config print" shows where a real run would detect or
// generate a value.
const (
	placeholderToken    = "abcdef.0123456789abcdef"
	placeholderNodeName = "node"
	placeholderAddress  = "1.2.3.4"
	placeholderEndpoint = "kube-apiserver:6443"
)

// componentConfigKinds names the component configurations "config print"
// can add to its output.
func componentConfigKinds() []string { return []string{config.KindKubeProxy, config.KindKubelet} }

func newConfigPrintCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print a default configuration",
		Long:  "Print the configuration kubeadm would use for a command when given no file, as a starting point for your own.",
		Args:  cobra.NoArgs,
		RunE:  workflow.RequireSubcommand,
	}
	var initComponents, joinComponents []string
	initCmd := &cobra.Command{
		Use:   "init-defaults",
		Short: "Print the default configuration of 'kubeadm init'",
		Long: `Print the default InitConfiguration and ClusterConfiguration.

Values kubeadm finds on the machine at run time are shown as placeholders:
the bootstrap token, the node name and the advertise address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds, err := checkComponentConfigKinds(initComponents)
			if err != nil {
				return err
			}
			out, err := initDefaults(kinds)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	initCmd.Flags().StringSliceVar(&initComponents, "component-configs", nil, fmt.Sprintf("Also print the defaults of these component configurations (any of %s).", strings.Join(componentConfigKinds(), ", ")))

	joinCmd := &cobra.Command{
		Use:   "join-defaults",
		Short: "Print the default configuration of 'kubeadm join'",
		Long:  "Print the default JoinConfiguration. The bootstrap token and API server address are placeholders.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kinds, err := checkComponentConfigKinds(joinComponents)
			if err != nil {
				return err
			}
			out, err := joinDefaults(hostEnvironment(streams.Err), kinds)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	joinCmd.Flags().StringSliceVar(&joinComponents, "component-configs", nil, fmt.Sprintf("Also print the defaults of these component configurations (any of %s).", strings.Join(componentConfigKinds(), ", ")))

	resetCmd := &cobra.Command{
		Use:   "reset-defaults",
		Short: "Print the default configuration of 'kubeadm reset'",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := &v1beta4.ResetConfiguration{}
			v1beta4.SetDefaults_ResetConfiguration(c)
			c.TypeMeta = config.ResetToV1beta4(&kubeadm.ResetConfiguration{}).TypeMeta
			return writeDocs(cmd, c)
		},
	}
	upgradeCmd := &cobra.Command{
		Use:   "upgrade-defaults",
		Short: "Print the default configuration of the 'kubeadm upgrade' commands",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := &v1beta4.UpgradeConfiguration{}
			v1beta4.SetDefaults_UpgradeConfiguration(c)
			c.TypeMeta = config.UpgradeToV1beta4(&kubeadm.UpgradeConfiguration{}).TypeMeta
			return writeDocs(cmd, c)
		},
	}
	cmd.AddCommand(initCmd, joinCmd, resetCmd, upgradeCmd)
	return cmd
}

func writeDocs(cmd *cobra.Command, objs ...any) error {
	out, err := config.MarshalDocuments(objs...)
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

func checkComponentConfigKinds(kinds []string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, k := range kinds {
		known := false
		for _, c := range componentConfigKinds() {
			if k == c {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("unknown component configuration %q in --component-configs; choose among %s", k, strings.Join(componentConfigKinds(), ", "))
		}
		set[k] = true
	}
	return set, nil
}

// initDefaults builds the statically defaulted init configuration with
// placeholders where a real run would look at the machine.
func initDefaults(components map[string]bool) ([]byte, error) {
	init := &v1beta4.InitConfiguration{}
	cluster := &v1beta4.ClusterConfiguration{}
	v1beta4.SetDefaults_InitConfiguration(init)
	v1beta4.SetDefaults_ClusterConfiguration(cluster)
	tok, err := v1beta4.ParseBootstrapTokenString(placeholderToken)
	if err != nil {
		return nil, err
	}
	init.BootstrapTokens[0].Token = tok
	init.NodeRegistration.Name = placeholderNodeName
	init.NodeRegistration.CRISocket = v1beta4.DefaultCRISocket
	init.LocalAPIEndpoint.AdvertiseAddress = placeholderAddress
	own := version.MustParse(version.KubernetesVersion)
	cluster.KubernetesVersion = fmt.Sprintf("%d.%d.0", own.Major(), own.Minor())

	internal := &kubeadm.InitConfiguration{}
	*internal = kubeadm.InitConfiguration{}
	i4, c4 := config.InitToV1beta4(&kubeadm.InitConfiguration{})
	init.TypeMeta, cluster.TypeMeta = i4.TypeMeta, c4.TypeMeta
	objs := []any{init, cluster}
	objs = append(objs, componentDefaults(cluster, netip.MustParseAddr(placeholderAddress), components)...)
	return config.MarshalDocuments(objs...)
}

func joinDefaults(env config.Environment, components map[string]bool) ([]byte, error) {
	join := &v1beta4.JoinConfiguration{
		Discovery: v1beta4.Discovery{BootstrapToken: &v1beta4.BootstrapTokenDiscovery{
			Token:                    placeholderToken,
			APIServerEndpoint:        placeholderEndpoint,
			UnsafeSkipCAVerification: true,
		}},
	}
	v1beta4.SetDefaults_JoinConfiguration(join)
	join.TypeMeta = config.JoinToV1beta4(&kubeadm.JoinConfiguration{}).TypeMeta
	join.NodeRegistration.CRISocket = v1beta4.DefaultCRISocket
	name, err := env.Hostname()
	if err != nil {
		return nil, err
	}
	join.NodeRegistration.Name = name
	cluster := &v1beta4.ClusterConfiguration{}
	v1beta4.SetDefaults_ClusterConfiguration(cluster)
	objs := []any{join}
	objs = append(objs, componentDefaults(cluster, netip.Addr{}, components)...)
	return config.MarshalDocuments(objs...)
}

func componentDefaults(cluster *v1beta4.ClusterConfiguration, advertise netip.Addr, components map[string]bool) []any {
	if len(components) == 0 {
		return nil
	}
	internal := &kubeadm.ClusterConfiguration{
		Networking:      cluster.Networking,
		CertificatesDir: cluster.CertificatesDir,
	}
	config.ParseAddresses(internal)
	config.DefaultComponentConfigs(internal, advertise, nil)
	var objs []any
	if components[config.KindKubelet] {
		objs = append(objs, internal.ComponentConfigs.Kubelet)
	}
	if components[config.KindKubeProxy] {
		objs = append(objs, internal.ComponentConfigs.KubeProxy)
	}
	return objs
}

// ---- config migrate ----

func newConfigMigrateCmd(streams Streams) *cobra.Command {
	var oldPath, newPath string
	var allowExperimental bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Convert a configuration file to the current format",
		Long: `Read a kubeadm configuration file in any format this kubeadm understands
(kubeadm.k8s.io/v1beta4) and write it in the current format,
kubeadm.k8s.io/v1beta4, with every default filled in.

The result goes to --new-config, or to standard output without it. The
input must be a valid configuration.`,
		Example: `  kubeadm config migrate --old-config old.yaml --new-config new.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if oldPath == "" {
				return exitcode.ValidationError(errors.New("the --old-config flag is required"))
			}
			env := hostEnvironment(streams.Err)
			out, err := migrate(cmd.Context(), env, oldPath, allowExperimental)
			if err != nil {
				return err
			}
			if newPath == "" {
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			return atomicfile.Write(newPath, out, 0o600)
		},
	}
	cmd.Flags().StringVar(&oldPath, "old-config", "", "Configuration file to read.")
	cmd.Flags().StringVar(&newPath, "new-config", "", "File to write the converted configuration to (default: standard output).")
	cmd.Flags().BoolVar(&allowExperimental, "allow-experimental-api", false, "Accept configuration API versions that are still experimental.")
	return cmd
}

func migrate(ctx context.Context, env config.Environment, path string, allowExperimental bool) ([]byte, error) {
	// Migrating is how users leave an old format, so no deprecation
	// warnings here; unknown fields are refused so nothing is dropped
	// silently.
	docs, err := readConfigAllowing(env, path, config.Strict, true, allowExperimental)
	if err != nil {
		return nil, err
	}
	var objs []any
	if docs.Init != nil || docs.Cluster != nil {
		cfg, err := loadInitConfig(ctx, env, docs, config.DefaultOptions{})
		if err != nil {
			return nil, err
		}
		init, cluster := config.InitToV1beta4(cfg)
		objs = append(objs, init, cluster)
	}
	if docs.Join != nil {
		cfg, err := env.JoinConfiguration(docs, config.DefaultOptions{})
		if err != nil {
			return nil, err
		}
		if err := validationError(path, validation.ValidateJoinConfiguration(cfg)); err != nil {
			return nil, err
		}
		objs = append(objs, config.JoinToV1beta4(cfg))
	}
	if docs.Reset != nil {
		cfg, err := env.ResetConfiguration(docs, config.DefaultOptions{})
		if err != nil {
			return nil, err
		}
		if err := validationError(path, validation.ValidateResetConfiguration(cfg)); err != nil {
			return nil, err
		}
		objs = append(objs, config.ResetToV1beta4(cfg))
	}
	if docs.Upgrade != nil {
		cfg := env.UpgradeConfiguration(docs)
		if err := validationError(path, validation.ValidateUpgradeConfiguration(cfg)); err != nil {
			return nil, err
		}
		objs = append(objs, config.UpgradeToV1beta4(cfg))
	}
	// A file without kubeadm documents converts to nothing, as upstream's does.
	return config.MarshalDocuments(objs...)
}

// validationError turns a list of field errors into one error that exits
// with the validation code and names the file.
func validationError(source string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return exitcode.ValidationError(fmt.Errorf("%s: invalid configuration: %w", source, errs.ToAggregate()))
}

// ---- config validate ----

func newConfigValidateCmd(streams Streams) *cobra.Command {
	var path string
	var allowExperimental, allowDeprecated bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a configuration file",
		Long: `Read a kubeadm configuration file and report every problem in it: unknown or
repeated fields, values of the wrong type and values that do not validate.
The exit code is 0 for a valid file and 3 for an invalid one.`,
		Example: `  kubeadm config validate --config kubeadm.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return exitcode.ValidationError(errors.New("the --config flag is required"))
			}
			env := hostEnvironment(streams.Err)
			if err := validateFile(cmd.Context(), env, path, allowExperimental); err != nil {
				return err
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return err
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "Configuration file to check.")
	cmd.Flags().BoolVar(&allowExperimental, "allow-experimental-api", false, "Accept configuration API versions that are still experimental.")
	// No version is deprecated in this release; the flag is accepted for
	// upstream's scripts.
	cmd.Flags().BoolVar(&allowDeprecated, "allow-deprecated-api", false, "Accept configuration API versions that are deprecated (they are checked in any case, with a warning).")
	return cmd
}

func validateFile(ctx context.Context, env config.Environment, path string, allowExperimental bool) error {
	docs, err := readConfigAllowing(env, path, config.Strict, false, allowExperimental)
	if err != nil {
		return err
	}
	_, errs, err := env.ValidateDocuments(ctx, docs)
	if err != nil {
		return exitcode.ValidationError(err)
	}
	return validationError(path, errs)
}

// ---- config images ----

func newConfigImagesCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Work with the container images kubeadm uses",
		Args:  cobra.NoArgs,
		RunE:  workflow.RequireSubcommand,
	}
	cmd.AddCommand(newConfigImagesListCmd(streams), newConfigImagesPullCmd(streams))
	return cmd
}

type imagesListOptions struct {
	configPath        string
	kubernetesVersion string
	imageRepository   string
	featureGates      string
	output            string
	allowMissingKeys  *bool
}

func newConfigImagesListCmd(streams Streams) *cobra.Command {
	o := &imagesListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the images a cluster made with this configuration needs",
		Long: `List every container image kubeadm would run for the given configuration
(or the defaults): control-plane components, kube-proxy, CoreDNS, pause and
etcd. Disabled add-ons and external etcd are left out.

When --config is given, the version and repository come from the file and
the flags that set them are ignored.`,
		Example: `  kubeadm config images list
  kubeadm config images list --kubernetes-version v1.36.3 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			env := hostEnvironment(streams.Err)
			list, err := o.images(cmd.Context(), env)
			if err != nil {
				return err
			}
			return printImages(cmd, o.output, *o.allowMissingKeys, list)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "stable-1", "Kubernetes version (or release label) of the control plane.")
	f.StringVar(&o.imageRepository, "image-repository", v1beta4.DefaultImageRepository, "Registry to pull the control-plane images from.")
	f.StringVar(&o.featureGates, "feature-gates", "", "Comma-separated key=value pairs of kubeadm feature gates.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text|"+output.Formats+".")
	o.allowMissingKeys = addPrinterFlags(f)
	return cmd
}

func (o *imagesListOptions) images(ctx context.Context, env config.Environment) ([]string, error) {
	// Only the cluster-wide settings matter for images; the node's address
	// and CRI socket are not looked up.
	opts := config.DefaultOptions{SkipAddress: true, SkipCRISocket: true}
	if o.configPath != "" {
		docs, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		cfg, err := loadInitConfig(ctx, env, docs, opts)
		if err != nil {
			return nil, err
		}
		return images.List(&cfg.ClusterConfiguration), nil
	}
	cluster, err := imageFlagsCluster(o.kubernetesVersion, o.imageRepository, o.featureGates)
	if err != nil {
		return nil, err
	}
	docs := &config.Documents{Source: "flags", Cluster: cluster}
	cfg, err := env.ClusterConfiguration(ctx, docs)
	if err != nil {
		return nil, err
	}
	if err := validationError("flags", validation.ValidateClusterConfiguration(cfg)); err != nil {
		return nil, err
	}
	return images.List(cfg), nil
}

// imageFlagsCluster is the ClusterConfiguration the image commands'
// --kubernetes-version, --image-repository and --feature-gates describe.
func imageFlagsCluster(version, repository, featureGates string) (*v1beta4.ClusterConfiguration, error) {
	gates, err := parseFeatureGates(featureGates)
	if err != nil {
		return nil, exitcode.ValidationError(err)
	}
	return &v1beta4.ClusterConfiguration{KubernetesVersion: version, ImageRepository: repository, FeatureGates: gates}, nil
}

func parseFeatureGates(s string) (map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	gates := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("feature gate %q is not of the form name=true|false", kv)
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			gates[strings.TrimSpace(k)] = true
		case "false":
			gates[strings.TrimSpace(k)] = false
		default:
			return nil, fmt.Errorf("feature gate %q: value %q is not true or false", k, v)
		}
	}
	return gates, nil
}

// imageList is the machine-readable form of "config images list".
type imageList struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Images     []string `json:"images"`
}

func printImages(cmd *cobra.Command, format string, allowMissingKeys bool, list []string) error {
	out := cmd.OutOrStdout()
	printer, err := newPrinter(format, allowMissingKeys)
	if err != nil {
		return exitcode.ValidationError(err)
	}
	if printer != nil {
		return printer.Print(out, imageList{Kind: "Images", APIVersion: output.APIVersion, Images: list})
	}
	for _, img := range list {
		if _, err := fmt.Fprintln(out, img); err != nil {
			return err
		}
	}
	return nil
}
