package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/discovery"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/phases/joinphases"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// joinOptions are the flags of "kubeadm join" and its phases.
type joinOptions struct {
	configPath            string
	advertiseAddress      string
	bindPort              int32
	certificateKey        string
	controlPlane          bool
	criSocket             string
	discoveryFile         string
	discoveryToken        string
	caCertHashes          []string
	unsafeSkipCAVerify    bool
	dryRun                bool
	ignorePreflightErrors []string
	nodeName              string
	patchesDir            string
	tlsBootstrapToken     string
	token                 string
}

func newJoinCmd(streams Streams) *cobra.Command {
	o := &joinOptions{}
	var flags *pflag.FlagSet
	runner := &workflow.Runner[*joinphases.Data]{
		Phases: joinphases.Phases(),
		NewData: func(cmd *cobra.Command, args []string) (*joinphases.Data, error) {
			return o.data(flags, args, streams)
		},
		SkipPhases: func(d *joinphases.Data) []string { return d.Cfg.SkipPhases },
	}
	cmd := &cobra.Command{
		Use:   "join [api-server-endpoint]",
		Short: "Add this machine to a cluster as a worker or control-plane node",
		Long: `Add this machine to an existing cluster.

First the cluster is found and its certificate authority verified
(discovery): with a bootstrap token, the CA is pinned by its public key
hash (--discovery-token-ca-cert-hash, printed by "kubeadm init" and
"kubeadm token create --print-join-command"); with a discovery file, the
file's CA is trusted. Then the kubelet gets its own credentials through
the TLS bootstrap, using the bootstrap token. With --control-plane the
node also runs a control plane: the shared certificates are downloaded
(--certificate-key), its own are made, and a stacked etcd member joins the
cluster's etcd.`,
		Example: `  # Join as a worker, with the command "kubeadm init" printed
  kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef \
      --discovery-token-ca-cert-hash sha256:<hash of the CA's public key>

  # Join as another control-plane node
  kubeadm join cp.example.com:6443 --token abcdef.0123456789abcdef \
      --discovery-token-ca-cert-hash sha256:<hash> \
      --control-plane --certificate-key <key printed by init --upload-certs>

  # Join with a configuration file
  kubeadm join --config join.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runner.Run(cmd.Context(), args); err != nil {
				return err
			}
			d, err := runner.Data(args)
			if err != nil {
				return err
			}
			if d.DryRun {
				// What the join would write, as init's dry run shows it.
				v, err := d.InitView(cmd.Context())
				if err != nil {
					return err
				}
				if err := initphases.PrintDryRun(v); err != nil {
					return err
				}
			}
			printJoined(streams.Out, d)
			return nil
		},
	}
	flags = cmd.Flags()
	o.addFlags(flags)
	runner.BindToCommand(cmd)
	return cmd
}

func (o *joinOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file (a JoinConfiguration).")
	f.StringVar(&o.advertiseAddress, "apiserver-advertise-address", "", "With --control-plane: the address this node's API server advertises (default: the address of the default-route interface).")
	f.Int32Var(&o.bindPort, "apiserver-bind-port", v1beta4.DefaultAPIBindPort, "With --control-plane: the port this node's API server listens on.")
	f.StringVar(&o.certificateKey, "certificate-key", "", "Hex-encoded AES key that decrypts the control-plane certificates \"kubeadm init --upload-certs\" stored in the cluster.")
	f.BoolVar(&o.controlPlane, "control-plane", false, "Run a control plane on this node too.")
	f.StringVar(&o.criSocket, "cri-socket", "", "Container runtime socket URL (default: detected).")
	f.StringVar(&o.discoveryFile, "discovery-file", "", "File discovery: a kubeconfig file, or an https:// URL of one, naming the cluster and its CA.")
	f.StringVar(&o.discoveryToken, "discovery-token", "", "Token discovery: the bootstrap token that signs the cluster's public information.")
	f.StringSliceVar(&o.caCertHashes, "discovery-token-ca-cert-hash", nil, "Token discovery: the hash (\"sha256:<hex>\") of the public key of the CA to trust; may be repeated.")
	f.BoolVar(&o.unsafeSkipCAVerify, "discovery-token-unsafe-skip-ca-verification", false, "Token discovery: trust the CA the cluster presents without a pinned hash (unsafe).")
	f.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; write into a temporary folder and print what would be done.")
	f.StringSliceVar(&o.ignorePreflightErrors, "ignore-preflight-errors", nil, "Preflight checks whose errors only warn, e.g. 'IsPrivilegedUser,Swap'; 'all' for every check.")
	f.StringVar(&o.nodeName, "node-name", "", "Name of this node (default: the host name).")
	f.StringVar(&o.patchesDir, "patches", "", `Folder of patch files named "target[suffix][+patchtype].extension" (targets: kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kubeletconfiguration, corednsdeployment, kubeproxydaemonset).`)
	f.StringVar(&o.tlsBootstrapToken, "tls-bootstrap-token", "", "The bootstrap token the kubelet authenticates with until it has its own credentials.")
	f.StringVar(&o.token, "token", "", "The bootstrap token for both discovery and the TLS bootstrap, unless those are given on their own.")
}

// data builds the join phases' shared data.
func (o *joinOptions) data(flags *pflag.FlagSet, args []string, streams Streams) (*joinphases.Data, error) {
	if err := checkMixedArguments(flags); err != nil {
		return nil, err
	}
	env := hostEnvironment(streams.Err)
	var docs *config.Documents
	if o.configPath != "" {
		d, err := readConfig(env, o.configPath, config.Lenient, false)
		if err != nil {
			return nil, err
		}
		if d.Join == nil {
			return nil, exitcode.ValidationError(fmt.Errorf("%s: no JoinConfiguration document was found in the file", d.Source))
		}
		warnUnused(env, d, v1beta4.KindJoinConfiguration)
		docs = d
	} else {
		docs = o.documentsFromFlags(flags, args)
	}
	if flags.Changed("node-name") {
		docs.Join.NodeRegistration.Name = o.nodeName
	}
	cfg, err := env.JoinConfiguration(docs, config.DefaultOptions{})
	if err != nil {
		return nil, err
	}
	if flags.Changed("dry-run") {
		cfg.DryRun = o.dryRun
	}
	if err := validationError(docs.Source, validation.ValidateJoinConfiguration(cfg)); err != nil {
		return nil, err
	}
	ignored, err := mergeIgnoredPreflightErrors(o.ignorePreflightErrors, &cfg.NodeRegistration.IgnorePreflightErrors)
	if err != nil {
		return nil, err
	}

	d := &joinphases.Data{
		Cfg:                   cfg,
		KubeconfigDir:         joinphases.KubernetesDir,
		ManifestDir:           joinphases.ManifestsDir,
		KubeletDir:            joinphases.KubeletDir,
		DryRun:                cfg.DryRun,
		IgnorePreflightErrors: ignored,
		Out:                   streams.Out,
		Err:                   streams.Err,
		Now:                   time.Now,
		Env:                   env,
	}
	if cfg.ControlPlane != nil {
		d.CertificateKey = cfg.ControlPlane.CertificateKey
	}
	if cfg.Patches != nil {
		d.PatchesDir = cfg.Patches.Directory
	}
	if err := checkPatches(d.PatchesDir); err != nil {
		return nil, err
	}
	// Discovery's progress (one line per read of cluster-info) is for -v=1.
	disc := &discovery.Discoverer{Logf: func(format string, args ...any) {
		klog.V(1).Infof(format, args...)
	}}
	d.Discover = func(ctx context.Context) (*clientcmdapi.Config, error) {
		return disc.TLSBootstrapConfig(ctx, cfg)
	}
	if d.DryRun {
		dir, err := makeDryRunDir(joinDryRunDirEnv, dryRunParent, joinDryRunPrefix, streams.Err)
		if err != nil {
			return nil, err
		}
		d.DryRunDir = dir
		d.CertDir, d.KubeconfigDir, d.ManifestDir, d.KubeletDir = dir, dir, dir, dir
	}
	klog.V(1).Infof("[join] joining as %s", map[bool]string{true: "a control-plane node", false: "a worker node"}[cfg.ControlPlane != nil])
	return d, nil
}

// documentsFromFlags expresses the join flags as a JoinConfiguration
// document, so they are defaulted and validated as a file would be.
func (o *joinOptions) documentsFromFlags(flags *pflag.FlagSet, args []string) *config.Documents {
	j := &v1beta4.JoinConfiguration{}
	j.NodeRegistration.Name = o.nodeName
	j.NodeRegistration.CRISocket = o.criSocket
	j.DryRun = o.dryRun
	if o.patchesDir != "" {
		j.Patches = &v1beta4.Patches{Directory: o.patchesDir}
	}
	tlsToken := o.tlsBootstrapToken
	if tlsToken == "" {
		tlsToken = o.token
	}
	j.Discovery.TLSBootstrapToken = tlsToken
	// As upstream's: token discovery needs the API server's address (the
	// argument); without it, and without a file, there is no discovery.
	if o.discoveryFile != "" {
		j.Discovery.File = &v1beta4.FileDiscovery{KubeConfigPath: o.discoveryFile}
	} else if len(args) > 0 {
		tok := o.discoveryToken
		if tok == "" {
			tok = o.token
		}
		j.Discovery.BootstrapToken = &v1beta4.BootstrapTokenDiscovery{
			APIServerEndpoint:        args[0],
			Token:                    tok,
			CACertHashes:             o.caCertHashes,
			UnsafeSkipCAVerification: o.unsafeSkipCAVerify,
		}
	}
	if o.controlPlane {
		j.ControlPlane = &v1beta4.JoinControlPlane{
			LocalAPIEndpoint: v1beta4.APIEndpoint{AdvertiseAddress: o.advertiseAddress, BindPort: o.bindPort},
			CertificateKey:   o.certificateKey,
		}
	}
	return &config.Documents{Source: "flags", Join: j}
}

// printJoined tells the user what happened and what to do next, in
// upstream kubeadm's words, which scripts grep.
func printJoined(w io.Writer, d *joinphases.Data) {
	if d.DryRun {
		fmt.Fprintf(w, "\n[dryrun] Nothing was changed. The files a real join writes are in %s\n", d.DryRunDir)
		return
	}
	if !d.IsControlPlane() {
		fmt.Fprint(w, `
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.

`)
		return
	}
	etcd := "* A new etcd member was added to the local/stacked etcd cluster."
	if d.ExternalEtcd() {
		etcd = ""
	}
	fmt.Fprintf(w, `
This node has joined the cluster and a new control plane instance was created:

* Certificate signing request was sent to apiserver and approval was received.
* The Kubelet was informed of the new secure connection details.
* Control plane label and taint were applied to the new node.
* The Kubernetes control plane instances scaled up.
%s

To start administering your cluster from this node, you need to run the following as a regular user:

	mkdir -p $HOME/.kube
	sudo cp -i %s $HOME/.kube/config
	sudo chown $(id -u):$(id -g) $HOME/.kube/config

Run 'kubectl get nodes' to see this node join the cluster.

`, etcd, filepath.Join(joinphases.KubernetesDir, "admin.conf"))
}
