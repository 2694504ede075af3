package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// certsEnv holds what the certs commands take from the machine, so tests
// can point them at temporary folders and a fixed clock.
type certsEnv struct {
	// kubernetesDir holds the kubeconfig files ("/etc/kubernetes").
	kubernetesDir string
	now           func() time.Time
	newKey        pki.KeyGenerator // nil: real keys
	// loadEnv supplies the dynamic defaults of configurations.
	loadEnv func(errOut io.Writer) config.Environment
	// clusterClient makes the client check-expiration and renew read the
	// cluster's configuration with when --config is not given (nil:
	// apiclient.FromKubeconfig). An error means there is no cluster to ask.
	clusterClient func(kubeconfig string) (kubernetes.Interface, error)
	// renewal is the automatic renewal's part of the machine.
	renewal renewalEnv
}

// kubeconfigClient is the client the certs commands make from a
// kubeconfig file: newClient, or apiclient.FromKubeconfig when it is nil.
func kubeconfigClient(newClient func(kubeconfig string) (kubernetes.Interface, error)) func(kubeconfig string) (kubernetes.Interface, error) {
	if newClient != nil {
		return newClient
	}
	return func(path string) (kubernetes.Interface, error) {
		c, _, err := apiclient.FromKubeconfig(path, v1beta4.DefaultKubernetesAPICall)
		return c, err
	}
}

func newCertsCmd(streams Streams) *cobra.Command {
	return newCertsCmdWith(streams, certsEnv{
		kubernetesDir: initphases.KubernetesDir,
		now:           time.Now,
		loadEnv:       hostEnvironment,
	})
}

func newCertsCmdWith(streams Streams, env certsEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "certs",
		Aliases: []string{"certificates"},
		Short:   "Work with the certificates of the cluster",
		Long: `Create, inspect and renew the certificates kubeadm manages on a
control-plane node.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	cmd.AddCommand(
		newCertificateKeyCmd(streams),
		newCheckExpirationCmd(streams, env),
		newGenerateCSRCmd(streams, env),
		newRenewCmd(streams, env),
		newRotateCACmd(streams, env),
	)
	return cmd
}

// ---- certs certificate-key ----

func newCertificateKeyCmd(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "certificate-key",
		Short: "Print a new random certificate key",
		Long: `Print a new random key, 32 bytes in hexadecimal, of the kind "kubeadm init
--upload-certs --certificate-key" uses to encrypt the control-plane
certificates it uploads to the cluster.

"kubeadm init --upload-certs" without --certificate-key makes and prints one
by itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := newCertificateKey()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(streams.Out, key)
			return err
		},
	}
}

// newCertificateKey returns 32 random bytes in hexadecimal.
func newCertificateKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ---- configuration of the certs commands ----

// certsConfig is the configuration a certs command works with and where
// it came from.
type certsConfig struct {
	cfg *kubeadm.InitConfiguration
	// fromFile: --config was given.
	fromFile bool
}

// clusterSource is where check-expiration and renew look for the cluster's
// configuration when --config is not given, as upstream's do: the
// kubeadm-config ConfigMap, through the kubeconfig file.
type clusterSource struct {
	kubeconfig string
	client     func(kubeconfig string) (kubernetes.Interface, error)
	// out gets the progress lines, each starting with "[prefix] ".
	out    io.Writer
	prefix string
	// certDir, when set, holds the cluster CA whose key algorithm the
	// defaults take when the cluster does not answer: a renewal made
	// while the API server is down (its certificate expired, say) keeps
	// the cluster's algorithm instead of falling back to RSA-2048.
	certDir string
}

// read returns the cluster's documents, or nil when there is no cluster to
// ask (the kubeconfig file gives no client: not a control-plane node) or it
// could not be read, which it then says.
func (s clusterSource) read(ctx context.Context) *config.Documents {
	c, err := kubeconfigClient(s.client)(s.kubeconfig)
	if err != nil {
		klog.V(1).Infof("[%s] No client from %s (%v): using the default configuration", s.prefix, s.kubeconfig, err)
		return nil
	}
	fmt.Fprintf(s.out, "[%s] Reading the cluster's configuration from the %q ConfigMap in the %q namespace\n", s.prefix, uploadconfig.KubeadmConfigMap, metav1.NamespaceSystem)
	docs, err := uploadconfig.FetchDocuments(ctx, c, v1beta4.DefaultKubernetesAPICall, uploadconfig.FetchOptions{})
	if err != nil {
		fmt.Fprintf(s.out, "[%s] Could not read the cluster's configuration, so the default one is used: %v\n\n", s.prefix, err)
		return nil
	}
	fmt.Fprintln(s.out)
	return docs
}

// loadCertsConfig reads --config; without it the cluster's configuration
// from src, when src is set and the cluster answers, else the defaults.
// needNode asks for the node-specific defaults (name and advertise
// address), which only generate-csr uses.
func loadCertsConfig(ctx context.Context, env config.Environment, path string, needNode bool, src *clusterSource) (certsConfig, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	opts := config.DefaultOptions{SkipCRISocket: true, SkipAddress: !needNode}
	if path != "" {
		docs, err := readConfig(env, path, config.Lenient, false)
		if err != nil {
			return certsConfig{}, err
		}
		cfg, err := loadInitConfig(ctx, env, docs, opts)
		if err != nil {
			return certsConfig{}, err
		}
		return certsConfig{cfg: cfg, fromFile: true}, nil
	}
	if src != nil {
		if docs := src.read(ctx); docs != nil {
			cfg, err := loadInitConfig(ctx, env, &config.Documents{Source: docs.Source, Cluster: docs.Cluster}, opts)
			if err != nil {
				return certsConfig{}, err
			}
			return certsConfig{cfg: cfg}, nil
		}
	}
	// The defaults, at this binary's own Kubernetes version: nothing here
	// depends on the version, so no release label needs looking up.
	docs := &config.Documents{Source: "defaults", Cluster: &v1beta4.ClusterConfiguration{KubernetesVersion: version.KubernetesVersion}}
	cfg, err := env.InitConfiguration(ctx, docs, opts)
	if err != nil {
		return certsConfig{}, err
	}
	if err := validationError("defaults", validation.ValidateClusterConfiguration(&cfg.ClusterConfiguration)); err != nil {
		return certsConfig{}, err
	}
	if src != nil && src.certDir != "" {
		src.keepCAAlgorithm(&cfg.ClusterConfiguration)
	}
	return certsConfig{cfg: cfg}, nil
}

// keepCAAlgorithm gives cluster, the defaults, the key algorithm of the
// cluster CA in s.certDir, when it reads: kubeadm makes every key of a
// cluster with one algorithm, so that is the cluster's encryptionAlgorithm.
func (s clusterSource) keepCAAlgorithm(cluster *kubeadm.ClusterConfiguration) {
	ca, err := pki.LoadCert(pki.CertPath(s.certDir, pki.CAName))
	if err != nil {
		return
	}
	alg, ok := pki.KeyAlgorithmOf(ca.PublicKey)
	if !ok || alg == cluster.KeyAlgorithm() {
		return
	}
	cluster.EncryptionAlgorithm = alg
	fmt.Fprintf(s.out, "[%s] New keys are %s, the algorithm of the cluster CA's key\n", s.prefix, alg)
}

// certDir is the certificate folder of check-expiration and renew: the
// configuration's when --config is given (the flag is then ignored, as
// with kubeadm), else the flag's.
func (c certsConfig) certDir(flag string) string {
	if c.fromFile {
		return c.cfg.CertificatesDir
	}
	return flag
}

// ---- certs check-expiration ----

type checkExpirationOptions struct {
	certsConfigFlags
	output           string
	allowMissingKeys *bool
}

// certsConfigFlags are the flags that say where the configuration of a
// certs command comes from (--config, else the cluster through
// --kubeconfig, else the defaults) and where the certificates are.
type certsConfigFlags struct {
	configPath string
	certDir    string
	kubeconfig string
}

func (o *certsConfigFlags) add(f *pflag.FlagSet) {
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder holding the certificates (ignored with --config, which sets certificatesDir).")
	f.StringVar(&o.kubeconfig, "kubeconfig", defaultKubeconfig, "Kubeconfig file used to reach the cluster.")
}

// load reads the configuration as the flags say, telling progress (with
// prefix) where it comes from, and returns it with the certificate folder.
// For a command that makes keys (newKeys), a default configuration takes
// the key algorithm of the cluster CA in --cert-dir.
func (o *certsConfigFlags) load(ctx context.Context, streams Streams, env certsEnv, progress io.Writer, prefix string, newKeys bool) (certsConfig, string, error) {
	src := &clusterSource{kubeconfig: o.kubeconfig, client: env.clusterClient, out: progress, prefix: prefix}
	if newKeys {
		src.certDir = o.certDir
	}
	cc, err := loadCertsConfig(ctx, env.loadEnv(streams.Err), o.configPath, false, src)
	if err != nil {
		return certsConfig{}, "", err
	}
	return cc, cc.certDir(o.certDir), nil
}

func newCheckExpirationCmd(streams Streams, env certsEnv) *cobra.Command {
	o := &checkExpirationOptions{}
	cmd := &cobra.Command{
		Use:   "check-expiration",
		Short: "Show when the certificates of this node expire",
		Long: `Show when each certificate kubeadm manages on this node expires: the
certificate files in the certificate folder, the client certificates embedded
in admin.conf, super-admin.conf, controller-manager.conf and scheduler.conf,
and the certificate authorities. A certificate whose CA key is not on the node
is marked as externally managed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), streams, env)
		},
	}
	f := cmd.Flags()
	o.add(f)
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text|"+output.Formats+".")
	o.allowMissingKeys = addPrinterFlags(f)
	return cmd
}

func (o *checkExpirationOptions) run(ctx context.Context, streams Streams, env certsEnv) error {
	printer, err := newPrinter(o.output, *o.allowMissingKeys)
	if err != nil {
		return exitcode.ValidationError(err)
	}
	progress := streams.Out
	if printer != nil {
		progress = io.Discard // the document alone
	}
	cc, certDir, err := o.load(ctx, streams, env, progress, "check-expiration", false)
	if err != nil {
		return err
	}
	certs, cas, err := pki.CheckExpiration(&cc.cfg.ClusterConfiguration, certDir, env.kubernetesDir)
	if err != nil {
		return err
	}
	now := env.now()
	if printer != nil {
		return printer.Print(streams.Out, expirationDocument(certs, cas, now))
	}
	if err := printExpirationTables(streams.Out, certs, cas, now); err != nil {
		return err
	}
	printRenewalStatus(ctx, streams.Out, env.renewal)
	if lines := carotation.Status(&cc.cfg.ClusterConfiguration, cc.certDir(o.certDir), env.kubernetesDir); len(lines) > 0 {
		fmt.Fprintln(streams.Out, "CA rotation under way (kubeadm certs rotate-ca):")
		for _, l := range lines {
			fmt.Fprintf(streams.Out, "  %s\n", l)
		}
	}
	return nil
}

// printExpirationTables writes the two tables of check-expiration's text
// output, aligned as kubeadm aligns them.
func printExpirationTables(out io.Writer, certs, cas []pki.ExpirationInfo, now time.Time) error {
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	const when = "Jan 02, 2006 15:04 MST"
	tw := tabwriter.NewWriter(out, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tCERTIFICATE AUTHORITY\tEXTERNALLY MANAGED")
	for _, c := range certs {
		if c.Missing {
			fmt.Fprintf(tw, "!MISSING! %s\t\t\t\t\n", c.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%-8s\n", c.Name, c.NotAfter.UTC().Format(when),
			duration.ShortHumanDuration(c.NotAfter.Sub(now)), c.CAName, yesNo(c.ExternallyManaged))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "CERTIFICATE AUTHORITY\tEXPIRES\tRESIDUAL TIME\tEXTERNALLY MANAGED")
	for _, c := range cas {
		if c.Missing {
			fmt.Fprintf(tw, "!MISSING! %s\t\t\t\n", c.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%-8s\n", c.Name, c.NotAfter.UTC().Format(when),
			duration.ShortHumanDuration(c.NotAfter.Sub(now)), yesNo(c.ExternallyManaged))
	}
	return tw.Flush()
}

// expirationInfo is the machine-readable form of check-expiration
// (output.kubeadm.k8s.io/v1alpha3 CertificateExpirationInfo).
type expirationInfo struct {
	Kind                   string            `json:"kind"`
	APIVersion             string            `json:"apiVersion"`
	Certificates           []expirationEntry `json:"certificates"`
	CertificateAuthorities []expirationEntry `json:"certificateAuthorities"`
}

type expirationEntry struct {
	Name           string      `json:"name"`
	ExpirationDate metav1.Time `json:"expirationDate"`
	// ResidualTime is in whole seconds.
	ResidualTime      int64  `json:"residualTime"`
	ExternallyManaged bool   `json:"externallyManaged"`
	CAName            string `json:"caName,omitempty"`
	Missing           bool   `json:"missing"`
}

// expirationDocument is check-expiration's machine-readable output.
func expirationDocument(certs, cas []pki.ExpirationInfo, now time.Time) expirationInfo {
	entries := func(list []pki.ExpirationInfo) []expirationEntry {
		es := make([]expirationEntry, 0, len(list))
		for _, c := range list {
			e := expirationEntry{Name: c.Name, Missing: c.Missing}
			if !c.Missing {
				e.ExpirationDate = metav1.NewTime(c.NotAfter.UTC())
				e.ResidualTime = int64(c.NotAfter.Sub(now) / time.Second)
				e.ExternallyManaged = c.ExternallyManaged
				e.CAName = c.CAName
			}
			es = append(es, e)
		}
		return es
	}
	return expirationInfo{
		Kind:                   "CertificateExpirationInfo",
		APIVersion:             output.APIVersion,
		Certificates:           entries(certs),
		CertificateAuthorities: entries(cas),
	}
}

// ---- certs generate-csr ----

type generateCSROptions struct {
	configPath    string
	certDir       string
	kubeconfigDir string
}

func newGenerateCSRCmd(streams Streams, env certsEnv) *cobra.Command {
	o := &generateCSROptions{}
	cmd := &cobra.Command{
		Use:   "generate-csr",
		Short: "Create keys and certificate signing requests for an external CA",
		Long: `Create a private key and a certificate signing request (CSR) for every
certificate the control plane needs, and for every kubeconfig file a partial
kubeconfig holding its private key (users > user > client-key-data) plus a
".csr" file beside it.

This serves the external CA mode, where the CA keys never reach the node:
have the requests signed by your CA, save each signed certificate next to
its key with the ".crt" extension, and put those of the kubeconfig files,
base64-encoded, in their "client-certificate-data" field.

Existing keys and requests are never overwritten.`,
		Example: `  # Keys and requests for the control-plane certificates and kubeconfig files
  kubeadm certs generate-csr --kubeconfig-dir /tmp/etc-k8s --cert-dir /tmp/etc-k8s/pki`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), streams, env)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file.")
	f.StringVar(&o.certDir, "cert-dir", "", "Folder for the keys and requests of the certificates (default: the configuration's certificatesDir).")
	f.StringVar(&o.kubeconfigDir, "kubeconfig-dir", initphases.KubernetesDir, "Folder for the kubeconfig files and their requests.")
	return cmd
}

func (o *generateCSROptions) run(ctx context.Context, streams Streams, env certsEnv) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cc, err := loadCertsConfig(ctx, env.loadEnv(streams.Err), o.configPath, true, nil)
	if err != nil {
		return err
	}
	certDir := o.certDir
	if certDir == "" {
		certDir = cc.cfg.CertificatesDir
	}
	opts := pki.Options{Now: env.now, NewKey: env.newKey}
	if err := pki.GenerateCSRs(ctx, cc.cfg, certDir, o.kubeconfigDir, opts, runtime.GOMAXPROCS(0)); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "generating keys and CSRs in %s\n", certDir)
	for _, c := range pki.CSRCerts() {
		fmt.Fprintf(streams.Out, "  %s\n", c.BaseName)
	}
	fmt.Fprintf(streams.Out, "generating keys and CSRs in %s\n", o.kubeconfigDir)
	for _, k := range pki.KubeconfigTable() {
		fmt.Fprintf(streams.Out, "  %s\n", k.File)
	}
	return nil
}

// ---- certs renew ----

// renewTarget is one thing "certs renew" can renew: a certificate file or
// the certificate embedded in a kubeconfig file.
type renewTarget struct {
	name        string // sub-command name
	description string
	cert        *pki.Cert           // a certificate file
	kubeconfig  *pki.KubeconfigCert // or a kubeconfig file
}

// renewTargets lists every renewable certificate, sorted by name; with
// cfg, only those cfg uses (no local etcd ones with an external etcd).
func renewTargets(cfg *kubeadm.ClusterConfiguration) []renewTarget {
	var out []renewTarget
	certs := pki.CertTable()
	if cfg != nil {
		certs = pki.Certificates(cfg)
	}
	for _, c := range certs {
		if c.IsCA() {
			continue
		}
		out = append(out, renewTarget{name: c.Name, description: c.Description, cert: &c})
	}
	for _, k := range pki.KubeconfigTable() {
		if k.KubeletOwned {
			continue
		}
		out = append(out, renewTarget{name: k.File, description: k.Description, kubeconfig: &k})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

type renewOptions struct {
	certsConfigFlags
}

func newRenewCmd(streams Streams, env certsEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "renew",
		Short: "Renew the certificates of this node",
		Long: `Renew the certificates kubeadm manages on this node, one at a time or all
together, with the certificate authorities in the certificate folder.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	addFlags := func(c *cobra.Command, o *renewOptions) { o.add(c.Flags()) }

	all := &renewOptions{}
	allCmd := &cobra.Command{
		Use:   "all",
		Short: "Renew every certificate",
		Long: `Renew every certificate kubeadm manages on this node, whatever its expiry
date. Use the other sub-commands to renew them one by one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return all.run(cmd.Context(), streams, env, "")
		},
	}
	addFlags(allCmd, all)
	cmd.AddCommand(allCmd, newRenewExpiringCmd(streams, env))

	for _, t := range renewTargets(nil) {
		o := &renewOptions{}
		c := &cobra.Command{
			Use:   t.name,
			Short: "Renew the " + t.description,
			Long: fmt.Sprintf(`Renew the %s, whatever its expiry date.

The new certificate keeps the subject and alternative names of the old one;
it gets a new key and is signed by its CA from the certificate folder. Restart
the components that use it afterwards, and copy it wherever else it is used.`, t.description),
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd.Context(), streams, env, t.name)
			},
		}
		addFlags(c, o)
		cmd.AddCommand(c)
	}
	return cmd
}

// run renews the target called only, or every target when only is "".
func (o *renewOptions) run(ctx context.Context, streams Streams, env certsEnv, only string) error {
	cc, certDir, err := o.load(ctx, streams, env, streams.Out, "renew", true)
	if err != nil {
		return err
	}
	cluster := &cc.cfg.ClusterConfiguration
	var targets []renewTarget
	for _, t := range renewTargets(cluster) {
		if only == "" || t.name == only {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		// A local etcd certificate with an external etcd: kubeadm does not
		// manage it, and reports it missing as kubeadm does.
		for _, t := range renewTargets(nil) {
			if t.name == only {
				fmt.Fprintf(streams.Out, "MISSING! %s\n", t.description)
			}
		}
		return nil
	}

	// Make the keys of all the renewals at once.
	var names []string
	for _, t := range targets {
		if renewable(t, certDir, env.kubernetesDir) {
			names = append(names, t.name)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	pool := pki.NewKeyPool(ctx, env.newKey, cluster.KeyAlgorithm(), names, runtime.GOMAXPROCS(0))

	for _, t := range targets {
		opts := pki.Options{Now: env.now, NewKey: pool.Generator(t.name)}
		if t.cert != nil {
			_, err = pki.RenewCert(cluster, certDir, *t.cert, opts)
		} else {
			_, err = pki.RenewKubeconfigCert(cluster, filepath.Join(env.kubernetesDir, t.kubeconfig.File), certDir, opts)
		}
		var ext *pki.ExternalCAError
		switch {
		case err == nil:
			fmt.Fprintf(streams.Out, "%s renewed\n", t.description)
		case errors.Is(err, pki.ErrMissing):
			fmt.Fprintf(streams.Out, "MISSING! %s\n", t.description)
		case errors.As(err, &ext):
			fmt.Fprintf(streams.Out, "Detected external CA (%s is absent): the %s cannot be renewed\n", ext.KeyPath, t.description)
		default:
			return fmt.Errorf("renewing the %s: %w", t.description, err)
		}
	}
	if cis.Enabled(cluster.FeatureGates) {
		if err := renewHardened(cc.cfg, certDir, env, only == "", streams.Out); err != nil {
			return err
		}
	}
	if only == "" {
		fmt.Fprintln(streams.Out, "\nDone renewing certificates. Restart kube-apiserver, kube-controller-manager, kube-scheduler and etcd so that they use the new certificates.")
	}
	return nil
}

// renewHardened finishes a renewal under the CISHardening feature gate:
// with all, the kubelet serving certificate approver's kubeconfig is
// renewed too (when the node has it); then etcd's renewed files go back
// to etcd's user, which etcd runs as.
func renewHardened(cfg *kubeadm.InitConfiguration, certDir string, env certsEnv, all bool, out io.Writer) error {
	if all {
		path := cis.ApproverKubeconfig(env.kubernetesDir)
		_, err := pki.RenewKubeconfigCert(&cfg.ClusterConfiguration, path, certDir, pki.Options{Now: env.now, NewKey: env.newKey})
		switch {
		case err == nil:
			fmt.Fprintf(out, "certificate embedded in the kubeconfig file for the kubelet serving certificate approver renewed\n")
		case errors.Is(err, pki.ErrMissing):
		default:
			return fmt.Errorf("renewing %s: %w", path, err)
		}
	}
	return initphases.RestrictCertModes(&initphases.Data{Cfg: cfg, CertDir: certDir})
}

// renewable reports whether t and the key of its CA exist, so that its
// renewal will need a new key.
func renewable(t renewTarget, certDir, kubeconfigDir string) bool {
	var path, ca string
	if t.cert != nil {
		path, ca = pki.CertPath(certDir, t.cert.BaseName), t.cert.CA
	} else {
		path, ca = filepath.Join(kubeconfigDir, t.kubeconfig.File), pki.CAName
	}
	caCert, _ := pki.LookupCert(ca)
	return certFileExists(path) && certFileExists(pki.KeyPath(certDir, caCert.BaseName))
}

// certFileExists reports whether path exists (false when it cannot tell).
func certFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
