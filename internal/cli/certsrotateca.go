package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/phases/rotatecaphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/podrestart"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// ---- certs rotate-ca ----

type rotateCAOptions struct {
	configPath     string
	certDir        string
	kubeconfig     string
	dryRun         bool
	dropOldSA      bool
	uploadCerts    bool
	certificateKey string
}

func newRotateCACmd(streams Streams, env certsEnv) *cobra.Command {
	o := &rotateCAOptions{}
	runner := &workflow.Runner[*rotatecaphases.Data]{
		Phases: rotatecaphases.Phases(),
		NewData: func(cmd *cobra.Command, _ []string) (*rotatecaphases.Data, error) {
			return o.data(cmd.Context(), streams, env)
		},
	}
	cmd := &cobra.Command{
		Use:   "rotate-ca",
		Short: "Replace the cluster CA, the front proxy CA, the etcd CA and the service-account key without stopping the cluster",
		Long: `Replace the cluster CA, the front proxy CA, the etcd CA (unless etcd is
external) and the service-account signing key in steps that never leave a
client or component without trust: make the new CAs and key (prepare),
trust the current and the new ones everywhere (trust), sign with the new
ones and re-issue every certificate they sign (sign), then drop the old
ones (finish).

On a cluster of one node, run it once. With more nodes, each phase runs on
every node before the next starts: on the first control-plane node, prepare
with --upload-certs stores the new CAs encrypted in the cluster and prints
the certificate key; prepare with --certificate-key downloads them on each
other control-plane node (or copy the folder rotate-ca of the certificate
folder there by hand); then run "phase trust", "phase sign" and
"phase finish" on each node, control-plane nodes first. A phase that needs another node to catch up first says which.
Each phase looks at what the files and the cluster hold and changes only
what is missing: run again, or after a crash, it carries on where it
stopped. The API server reads the service-account keys and the etcd CA
only at start, so trust, sign and finish restart it: on a cluster with one
control-plane node, the API server is away meanwhile.
Finish keeps accepting tokens of the old service-account key until an hour
after sign, when the kubelets have replaced the Pods' tokens: before that
it refuses, unless --drop-old-service-account-key-now.`,
		Example: `  # A cluster of one node
  kubeadm certs rotate-ca

  # More nodes: on the first control-plane node
  kubeadm certs rotate-ca phase prepare --upload-certs
  kubeadm certs rotate-ca phase trust
  # on every other control-plane node, with the key prepare printed
  kubeadm certs rotate-ca phase prepare --certificate-key <key>
  kubeadm certs rotate-ca phase trust
  # then "phase trust" on every other node; then, node by node,
  # control-plane nodes first, "phase sign", then "phase finish"
  kubeadm certs rotate-ca phase sign --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runner.Run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "Path to a kubeadm configuration file (default: the cluster's, from the kubeadm-config ConfigMap).")
	f.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder holding the certificates (ignored with --config, which sets certificatesDir).")
	f.StringVar(&o.kubeconfig, "kubeconfig", defaultKubeconfig, "Kubeconfig file used to reach the cluster.")
	f.BoolVar(&o.dryRun, "dry-run", false, "Change nothing; print what each phase would change.")
	f.BoolVar(&o.dropOldSA, carotation.DropOldServiceAccountKeyFlag, false, "Let finish drop the old service-account public key within the hour after sign, instead of refusing: the tokens only it signed (of Pods whose kubelet has not replaced them yet, of Pods that asked for a longer lifetime, legacy token Secrets) stop working at once.")
	f.BoolVar(&o.uploadCerts, "upload-certs", false, "Let prepare store the new CAs and service-account key in the Secret kube-system/"+carotation.SecretName+", encrypted with the certificate key, for the other control-plane nodes.")
	f.StringVar(&o.certificateKey, "certificate-key", "", "Key (64 hexadecimal characters) that encrypts the new CAs with --upload-certs (a new one is printed when empty), or with which prepare downloads them on another control-plane node.")
	runner.BindToCommand(cmd)
	return cmd
}

func (o *rotateCAOptions) data(ctx context.Context, streams Streams, env certsEnv) (*rotatecaphases.Data, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	manifests := filepath.Join(env.kubernetesDir, "manifests")
	_, err := os.Stat(filepath.Join(manifests, "kube-apiserver.yaml"))
	controlPlane := err == nil
	d := &rotatecaphases.Data{
		Layout:        carotation.Layout{CertDir: o.certDir, KubernetesDir: env.kubernetesDir, ManifestDir: manifests},
		KubeletConf:   filepath.Join(env.kubernetesDir, "kubelet.conf"),
		KubeletCAFile: pki.CertPath(o.certDir, pki.CAName),
		ControlPlane:  controlPlane,
		DryRun:        o.dryRun,
		Out:           streams.Out,
		KeyOptions:    pki.Options{Now: env.now, NewKey: env.newKey},
		Timeout:       v1beta4.DefaultControlPlaneComponentHealthCheck,

		DropOldServiceAccountKey: o.dropOldSA,
		UploadCerts:              o.uploadCerts,
		CertificateKey:           o.certificateKey,
	}
	if controlPlane {
		src := &clusterSource{kubeconfig: o.kubeconfig, client: env.clusterClient, out: streams.Out, prefix: "rotate-ca", certDir: o.certDir}
		cc, err := loadCertsConfig(ctx, env.loadEnv(streams.Err), o.configPath, false, src)
		if err != nil {
			return nil, err
		}
		d.Cfg = &cc.cfg.ClusterConfiguration
		d.CertDir = cc.certDir(o.certDir)
		if t := cc.cfg.Timeouts; t != nil && t.ControlPlaneComponentHealthCheck != nil && t.ControlPlaneComponentHealthCheck.Duration > 0 {
			d.Timeout = t.ControlPlaneComponentHealthCheck.Duration
		}
	}
	d.Client = func(context.Context) (kubernetes.Interface, error) {
		c, err := kubeconfigClient(env.clusterClient)(o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("reaching the cluster through %s: %w", o.kubeconfig, err)
		}
		return c, nil
	}
	leaders := func() *leaderlease.Waiter {
		return leaderWaiter(o.kubeconfig, env.clusterClient, d.Timeout, 0, streams.Out, "[rotate-ca]")
	}
	d.Components = func(ctx context.Context) (carotation.Components, func(), error) {
		return realComponents(ctx, d.ManifestDir, d.Timeout, leaders())
	}
	d.Renewal = func(ctx context.Context) (certrenewal.Node, func(), error) {
		if env.renewal.node != nil {
			return env.renewal.node(ctx, d.Timeout)
		}
		return realNode(ctx, d.Timeout, leaders())
	}
	kr := &carotation.KubeletRestarter{Host: kubelet.OSHost{}, HealthURL: carotation.DefaultKubeletHealthURL, Timeout: d.Timeout}
	d.RestartKubelet = kr.Restart
	return d, nil
}

// realComponents reaches the control-plane components of this node
// through the container runtime its kubelet uses.
func realComponents(ctx context.Context, manifestDir string, timeout time.Duration, leaders *leaderlease.Waiter) (carotation.Components, func(), error) {
	rt, err := dialKubeletRuntime(ctx)
	if err != nil {
		return nil, nil, err
	}
	n := &carotation.NodeComponents{ManifestDir: manifestDir, Restarter: &podrestart.Restarter{Runtime: rt, Timeout: timeout, Leaders: leaders}}
	return n, func() { rt.Close() }, nil
}
