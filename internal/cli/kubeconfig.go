package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func newKubeconfigCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Create kubeconfig files",
		Long:  "Create kubeconfig files for the cluster kubeadm set up.",
	}
	cmd.AddCommand(newKubeconfigUserCmd(streams))
	return cmd
}

// kubeconfigUserOptions are the flags of "kubeadm kubeconfig user".
type kubeconfigUserOptions struct {
	configPath string
	clientName string
	orgs       []string
	token      string
	validity   time.Duration
}

func newKubeconfigUserCmd(streams Streams) *cobra.Command {
	o := &kubeconfigUserOptions{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Print a kubeconfig file for another user",
		Long: `Print, on standard output, a kubeconfig file for a new user of the cluster.

The user authenticates with a client certificate signed by the cluster CA (from
the certificate folder of the configuration), or with --token. The API server
address, cluster name and certificate folder come from the configuration file,
or from the defaults when --config is not given.`,
		Example: `  # A kubeconfig file for the user "alice"
  kubeadm kubeconfig user --client-name=alice

  # The same, in the groups "dev" and "ops", using the settings of a configuration file
  kubeadm kubeconfig user --client-name=alice --org=dev --org=ops --config=kubeadm.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := o.run(cmd.Context(), streams)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, string(b))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.clientName, "client-name", "", "Name of the user; the CommonName of its client certificate.")
	f.StringSliceVar(&o.orgs, "org", nil, "Groups of the user; the Organizations of its client certificate.")
	f.StringVar(&o.token, "token", "", "Authenticate with this token instead of a client certificate.")
	f.DurationVar(&o.validity, "validity-period", v1beta4.DefaultCertificateValidityPeriod, "How long the client certificate is valid, counted from now.")
	_ = cmd.MarkFlagRequired("client-name")
	return cmd
}

// run returns the encoded kubeconfig.
func (o *kubeconfigUserOptions) run(ctx context.Context, streams Streams) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.clientName == "" {
		return nil, errors.New("--client-name must not be empty")
	}
	env := hostEnvironment(streams.Err)
	cfg, err := o.config(ctx, env)
	if err != nil {
		return nil, err
	}
	// As upstream kubeadm, the CA key is required even for a token.
	ca, err := kubeconfig.LoadCAWithKey(cfg.CertificatesDir)
	if err != nil {
		return nil, fmt.Errorf("cannot create the kubeconfig: %w", err)
	}
	server, err := kubeconfig.ControlPlaneURL(cfg, env.Warn)
	if err != nil {
		return nil, err
	}
	issuer := kubeconfig.Issuer{CA: ca, Validity: o.validity, Algorithm: cfg.KeyAlgorithm(), Now: time.Now}
	kc, err := issuer.Config(kubeconfig.Spec{
		ClusterName:   cfg.ClusterName,
		Server:        server,
		ClientName:    o.clientName,
		Organizations: o.orgs,
		Token:         o.token,
	}, nil)
	if err != nil {
		return nil, err
	}
	return kubeconfig.Encode(kc)
}

// config loads the cluster settings from --config, or the defaults.
func (o *kubeconfigUserOptions) config(ctx context.Context, env config.Environment) (*kubeadm.InitConfiguration, error) {
	opts := config.DefaultOptions{SkipCRISocket: true}
	docs := &config.Documents{Source: "defaults", Init: &v1beta4.InitConfiguration{}, Cluster: &v1beta4.ClusterConfiguration{}}
	if o.configPath != "" {
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		docs = d
	}
	return loadInitConfig(ctx, env, docs, opts)
}
