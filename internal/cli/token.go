package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// defaultAdminKubeconfig is --kubeconfig's default for the token commands.
const defaultAdminKubeconfig = "/etc/kubernetes/admin.conf"

// tokenOptions are the flags every token sub-command shares, and how the
// kubeconfig file is found when --kubeconfig is not given.
type tokenOptions struct {
	kubeconfig string
	dryRun     bool
	// apiCallTimeout bounds each request to the API server, unless the
	// --config file of "token create" sets timeouts.kubernetesAPICall.
	apiCallTimeout time.Duration

	getenv   func(string) string
	homeDir  func() (string, error)
	isFile   func(string) bool
	now      func() time.Time
	newToken func() (string, error)
}

func newTokenCmd(streams Streams) *cobra.Command {
	return newTokenCmdWith(&tokenOptions{
		apiCallTimeout: v1beta4.DefaultKubernetesAPICall,
		getenv:         os.Getenv,
		homeDir:        os.UserHomeDir,
		isFile: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && !fi.IsDir()
		},
		now:      time.Now,
		newToken: config.GenerateToken,
	})
}

// newTokenCmdWith is the token command with o's dependencies; the flags
// fill in the rest of o.
func newTokenCmdWith(o *tokenOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens",
		Long: `Bootstrap tokens let a new node prove it may join the cluster, and let it check
that it talks to the right cluster. A token has the form "abcdef.0123456789abcdef":
a public ID and a secret, both made of lower-case letters and digits. Keep the
secret part private.

Each token is a Secret named "bootstrap-token-<id>" of type
"bootstrap.kubernetes.io/token" in the kube-system namespace. With the
"authentication" usage the API server accepts it as a short-lived credential
(a joining node uses it to ask for its certificate); with the "signing" usage
the controller manager signs the public cluster-info ConfigMap with it, so a
joining node can check it talks to the right cluster. See
https://kubernetes.io/docs/reference/access-authn-authz/bootstrap-tokens/`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.kubeconfig, "kubeconfig", defaultAdminKubeconfig, "Kubeconfig file used to reach the cluster. When not given, the first file of $KUBECONFIG that exists is used, else $HOME/.kube/config if it exists, else this default.")
	pf.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; print the API calls that would be made.")
	cmd.AddCommand(newTokenGenerateCmd(), newTokenCreateCmd(o), newTokenListCmd(o), newTokenDeleteCmd(o))
	return cmd
}

// kubeconfigPath is --kubeconfig when given; otherwise the first existing
// file of $KUBECONFIG, then $HOME/.kube/config if it exists, then the
// default, as upstream kubeadm looks for it.
func (o *tokenOptions) kubeconfigPath(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("kubeconfig"); f != nil && f.Changed {
		return o.kubeconfig
	}
	for _, p := range filepath.SplitList(o.getenv("KUBECONFIG")) {
		if p != "" && o.isFile(p) {
			return p
		}
	}
	if home, err := o.homeDir(); err == nil && home != "" {
		if p := filepath.Join(home, ".kube", "config"); o.isFile(p) {
			return p
		}
	}
	return o.kubeconfig
}

// client returns a client for the kubeconfig file whose requests give up
// after timeout, and which only prints what it would change under
// --dry-run (reads still reach the cluster).
func (o *tokenOptions) client(cmd *cobra.Command, timeout time.Duration) (kubernetes.Interface, string, error) {
	path := o.kubeconfigPath(cmd)
	c, _, err := apiclient.FromKubeconfig(path, timeout)
	if err != nil {
		return nil, "", err
	}
	if o.dryRun {
		c = apiclient.DryRunClient(cmd.OutOrStdout(), c)
	}
	return c, path, nil
}

// commandContext is the command's context, or a background one.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// tokenFailure gives err exit code 1, as upstream's token commands use for
// every failure, invalid input included.
func tokenFailure(err error) error {
	if err == nil {
		return nil
	}
	return &exitcode.Error{Code: exitcode.Generic, Err: err}
}

func newTokenGenerateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Print a new random bootstrap token",
		Long: `Print a new random bootstrap token without creating it in any cluster.

Pass it to "kubeadm init --token" or put it in a configuration file, so the
token is known before the cluster exists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := config.GenerateToken()
			if err != nil {
				return fmt.Errorf("generating a bootstrap token: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
}

// tokenCreateOptions are the flags of "token create".
type tokenCreateOptions struct {
	configPath     string
	description    string
	ttl            time.Duration
	usages         []string
	groups         []string
	printJoin      bool
	certificateKey string
}

func newTokenCreateCmd(o *tokenOptions) *cobra.Command {
	c := &tokenCreateOptions{}
	cmd := &cobra.Command{
		Use:   "create [token]",
		Short: "Create a bootstrap token in the cluster",
		Long: `Create a bootstrap token in the cluster and print it.

[token] is the token to create, of the form "[a-z0-9]{6}.[a-z0-9]{16}"; make
it from a good random source (such as "kubeadm token generate"). Without it a
random token is made. A token whose ID is already taken is refused.

With --config, the tokens are the bootstrapTokens of the file's
InitConfiguration (all of them are created, the first is printed), and [token]
and the flags that describe a token are not used.`,
		Example: `  # A token for joining worker nodes, valid for two hours, as a join command
  kubeadm token create --ttl 2h --print-join-command`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tokenFailure(o.create(cmd, c, args))
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&c.description, "description", "", "Human-readable note on what the token is for.")
	f.DurationVar(&c.ttl, "ttl", v1beta4.DefaultTokenTTL, "How long the token lives before it is deleted (e.g. 30m, 2h); 0 means it never expires.")
	f.StringSliceVar(&c.usages, "usages", v1beta4.DefaultTokenUsages(), "What the token may be used for, comma-separated or repeated: signing, authentication.")
	f.StringSliceVar(&c.groups, "groups", []string{v1beta4.DefaultTokenGroup}, `Extra groups the token authenticates as (needs the "authentication" usage); each must match "\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z".`)
	f.BoolVar(&c.printJoin, "print-join-command", false, `Print the whole "kubeadm join" command that uses the token instead of only the token.`)
	f.StringVar(&c.certificateKey, "certificate-key", "", `With --print-join-command, add the flags that join a control-plane node with this key (make a key with "kubeadm init phase upload-certs --upload-certs").`)
	return cmd
}

func (o *tokenOptions) create(cmd *cobra.Command, c *tokenCreateOptions, args []string) error {
	if err := checkMixedArguments(cmd.Flags()); err != nil {
		return err
	}
	ctx := commandContext(cmd)
	cfg, err := c.configuration(ctx, cmd, o, args)
	if err != nil {
		return err
	}
	if len(cfg.BootstrapTokens) == 0 {
		return errors.New("the configuration holds no bootstrap token to create")
	}
	timeout := o.apiCallTimeout
	if c.configPath != "" {
		timeout = kubeadm.KubernetesAPICall(cfg.Timeouts)
	}
	client, kubeconfigPath, err := o.client(cmd, timeout)
	if err != nil {
		return err
	}
	if err := bootstraptoken.Create(ctx, client, cfg.BootstrapTokens, o.now()); err != nil {
		return err
	}
	token := cfg.BootstrapTokens[0].Token.String()
	if !c.printJoin {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), token)
		return err
	}
	line, err := bootstraptoken.JoinCommand(kubeconfigPath, token, c.certificateKey)
	if err != nil {
		return fmt.Errorf("making the join command: %w", err)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), line)
	return err
}

// configuration is the defaulted, validated init configuration whose
// tokens "token create" stores: the --config file's, or one token made of
// the flags and [token]. Neither the advertise address nor the container
// runtime is looked for (token create needs neither), and without a file
// the Kubernetes version is this kubeadm's own, so nothing is fetched.
func (c *tokenCreateOptions) configuration(ctx context.Context, cmd *cobra.Command, o *tokenOptions, args []string) (*kubeadm.InitConfiguration, error) {
	env := hostEnvironment(cmd.ErrOrStderr())
	env.NewToken = o.newToken
	opts := config.DefaultOptions{SkipAddress: true, SkipCRISocket: true}
	if c.configPath != "" {
		docs, err := readConfig(env, c.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		return loadInitConfig(ctx, env, docs, opts)
	}
	tok := v1beta4.BootstrapToken{
		Description: c.description,
		TTL:         &metav1.Duration{Duration: c.ttl},
		Usages:      c.usages,
		Groups:      c.groups,
	}
	if len(args) > 0 {
		t, err := v1beta4.ParseBootstrapTokenString(args[0])
		if err != nil {
			return nil, err
		}
		tok.Token = t
	}
	docs := &config.Documents{
		Source:  "flags",
		Init:    &v1beta4.InitConfiguration{BootstrapTokens: []v1beta4.BootstrapToken{tok}},
		Cluster: &v1beta4.ClusterConfiguration{KubernetesVersion: version.KubernetesVersion},
	}
	return loadInitConfig(ctx, env, docs, opts)
}

func newTokenListCmd(o *tokenOptions) *cobra.Command {
	var (
		output           string
		allowMissingKeys bool
		showManaged      bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bootstrap tokens of the cluster",
		Long: `List the bootstrap tokens stored in the cluster, with their remaining lifetime,
expiration, usages, description and extra groups. The tokens are shown whole,
secret part included.

Secrets of the bootstrap token type that do not hold a well-formed token are
left out, with a warning.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_ = showManaged // the output objects carry no managed fields
			if err := bootstraptoken.CheckOutputFormat(output, allowMissingKeys); err != nil {
				return tokenFailure(err)
			}
			client, _, err := o.client(cmd, o.apiCallTimeout)
			if err != nil {
				return tokenFailure(err)
			}
			tokens, skipped, err := bootstraptoken.List(commandContext(cmd), client)
			if err != nil {
				return tokenFailure(err)
			}
			for _, e := range skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; not listed\n", e)
			}
			return tokenFailure(bootstraptoken.Print(cmd.OutOrStdout(), output, tokens, o.now(), allowMissingKeys))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "text", "Output format: "+bootstraptoken.OutputFormats+".")
	f.BoolVar(&allowMissingKeys, "allow-missing-template-keys", true, "Let a template name keys a token lacks (go-template and jsonpath only).")
	f.BoolVar(&showManaged, "show-managed-fields", false, "Accepted for compatibility; tokens are printed without managed fields.")
	return cmd
}

func newTokenDeleteCmd(o *tokenOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "delete [token-value] ...",
		Short: "Delete bootstrap tokens from the cluster",
		Long: `Delete bootstrap tokens from the cluster. Each [token-value] is a whole token
("[a-z0-9]{6}.[a-z0-9]{16}") or only its ID ("[a-z0-9]{6}"). Deletion stops at
the first token that cannot be deleted (one that does not exist, for example).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tokenFailure(o.delete(cmd, args))
		},
	}
}

func (o *tokenOptions) delete(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errors.New(`missing argument: give the bootstrap tokens ("[a-z0-9]{6}.[a-z0-9]{16}") or token IDs ("[a-z0-9]{6}") to delete`)
	}
	ids := make([]string, len(args))
	for i, a := range args {
		id, err := bootstraptoken.ParseID(a)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	client, _, err := o.client(cmd, o.apiCallTimeout)
	if err != nil {
		return err
	}
	ctx := commandContext(cmd)
	for _, id := range ids {
		if err := bootstraptoken.Delete(ctx, client, id); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "bootstrap token %q deleted\n", id)
	}
	return nil
}
