package joinphases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/version"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Phases returns the join workflow, in the order upstream kubeadm runs it.
// The control-plane phases pass over a worker node.
func Phases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		PreflightPhase(preflight.NewHost),
		ControlPlanePreparePhase(),
		CheckEtcdPhase(),
		KubeletStartPhase(),
		EtcdJoinPhase(),
		KubeletWaitBootstrapPhase(),
		ControlPlaneJoinPhase(),
		WaitControlPlanePhase(),
		CertsRenewalPhase(),
	}
}

// commonFlags are the join flags every phase command accepts.
var commonFlags = []string{"config", "discovery-file", "discovery-token", "discovery-token-ca-cert-hash",
	"discovery-token-unsafe-skip-ca-verification", "tls-bootstrap-token", "token", "node-name", "dry-run"}

func withFlags(extra ...string) []string {
	return append(append([]string(nil), commonFlags...), extra...)
}

// onlyControlPlane passes a phase over on a worker node.
func onlyControlPlane(d *Data) (bool, error) { return d.IsControlPlane(), nil }

// PreflightPhase checks the machine, then runs discovery and reads the
// cluster's configuration; a control-plane node is also checked as a
// control-plane host and gets its images. Failed checks end the run with
// exit code 2. It only inspects (and pulls images), so it can run again.
func PreflightPhase(newHost func() preflight.Host) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "preflight [api-server-endpoint]",
		Short: "Check that this machine can join the cluster",
		Long: `Check that this machine can join the cluster: privileges, no credentials of
an earlier membership, the container runtime and the kubelet; then find the
cluster (discovery) and read its configuration. A node joining as a
control-plane node is also checked for free control-plane ports and gets the
control-plane images.`,
		Example: `  # Check this machine before joining with a configuration file
  kubeadm join phase preflight --config join.yaml`,
		InheritFlags: withFlags("cri-socket", "ignore-preflight-errors", "control-plane", "certificate-key",
			"apiserver-advertise-address", "apiserver-bind-port"),
		Run: func(ctx context.Context, d *Data) error { return runPreflight(ctx, d, newHost()) },
	}
}

// canTakeControlPlane refuses a control-plane join to a cluster without
// a controlPlaneEndpoint, unless its nodes reach the API servers through
// their node-local load balancers (NodeLocalAPILoadBalancer), which need
// no shared address.
func canTakeControlPlane(c *kubeadm.ClusterConfiguration) error {
	if selfhosting.Enabled(c.FeatureGates) {
		return fmt.Errorf("this cluster's control plane is self-hosted (feature gate %s), which supports one control-plane node: joining another is not supported yet; workers can join", selfhosting.Gate)
	}
	if c.ControlPlaneEndpoint != "" || apilb.Enabled(c.FeatureGates) {
		return nil
	}
	return errors.New("this cluster cannot take another control-plane node: it has no controlPlaneEndpoint, the stable address (a load balancer or DNS name) that all nodes use to reach whichever API server answers; it can only be set when the cluster is made (or, with the feature gate " + apilb.FeatureGate + ", each node reaches the API servers through its own local load balancer)")
}

func runPreflight(ctx context.Context, d *Data, h preflight.Host) error {
	fmt.Fprintln(d.Out, "[preflight] Running pre-flight checks")
	ignore := d.IgnorePreflightErrors
	if err := preflight.Run(ctx, []preflight.Check{preflight.IsPrivilegedUser(h)}, ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	if err := preflight.Run(ctx, preflight.JoinChecks(h, d.Cfg, KubernetesDir, version.KubernetesVersion), ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	fmt.Fprintln(d.Out, "[preflight] Reading the cluster's configuration")
	cfg, err := d.InitConfig(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[preflight] To see it yourself: kubectl -n kube-system get configmap kubeadm-config -o yaml\n")
	if !d.IsControlPlane() {
		return nil
	}
	if err := canTakeControlPlane(&cfg.ClusterConfiguration); err != nil {
		return err
	}
	if err := preflight.Run(ctx, preflight.JoinControlPlaneChecks(h, cfg, ManifestsDir), ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	// Without a certificate key the shared certificates must be here
	// already: say so before pulling images, as upstream's preflight does.
	if d.CertificateKey == "" {
		v, err := d.InitView(ctx)
		if err != nil {
			return err
		}
		if err := checkSharedPKI(v); err != nil {
			return err
		}
	}
	if d.DryRun {
		fmt.Fprintln(d.Out, "[preflight] Would pull the control-plane images (as 'kubeadm config images pull' does)")
		return nil
	}
	fmt.Fprintln(d.Out, "[preflight] Pulling the images a Kubernetes control plane needs")
	if err := preflight.Run(ctx, []preflight.Check{preflight.InitImagePull(h, cfg, klog.Warningf)}, ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	return nil
}

// ControlPlanePreparePhase makes the files of a new control-plane node:
// the shared certificates from the cluster (with the certificate key),
// this node's own certificates and kubeconfig files, and the static Pod
// manifests of the API server, controller manager and scheduler. Each step
// keeps what is already right on disk.
func ControlPlanePreparePhase() workflow.Phase[*Data] {
	flags := withFlags("control-plane", "certificate-key", "apiserver-advertise-address", "apiserver-bind-port", "patches")
	return workflow.Phase[*Data]{
		Name:  "control-plane-prepare",
		Short: "Make the files of a new control-plane node",
		Long: `Make what a new control-plane node needs on disk: the certificates shared by
all control-plane nodes (downloaded from the kubeadm-certs Secret with the
certificate key), this node's own certificates and kubeconfig files, and the
static Pod manifests of its control-plane components.`,
		RunIf: onlyControlPlane,
		Phases: []workflow.Phase[*Data]{
			{Name: "all", Short: "Run every control-plane-prepare step", RunAllSiblings: true, InheritFlags: flags},
			{
				Name:         "download-certs",
				Short:        "Download the certificates shared by control-plane nodes from the kubeadm-certs Secret",
				InheritFlags: flags,
				Run:          runDownloadCerts,
			},
			{
				Name:         "certs",
				Short:        "Make this node's certificates, signed by the cluster's authorities",
				InheritFlags: flags,
				Run:          runCerts,
			},
			{
				Name:         "kubeconfig",
				Short:        "Write the kubeconfig files of this node's control-plane components and of the administrator",
				InheritFlags: flags,
				Run: func(ctx context.Context, d *Data) error {
					return runInitPhase(ctx, d, initphases.KubeconfigPhase(), "admin", "controller-manager", "scheduler")
				},
			},
			{
				Name:         "control-plane",
				Short:        "Write the static Pod manifests of this node's control-plane components",
				InheritFlags: flags,
				Run: func(ctx context.Context, d *Data) error {
					return runInitPhase(ctx, d, initphases.ControlPlanePhase())
				},
			},
		},
	}
}

func runDownloadCerts(ctx context.Context, d *Data) error {
	if d.CertificateKey == "" {
		fmt.Fprintln(d.Out, "[download-certs] Skipping: no certificate key was given (--certificate-key), so the shared certificates must already be on this node")
		return nil
	}
	v, err := d.InitView(ctx)
	if err != nil {
		return err
	}
	c, err := d.BootstrapClient(ctx)
	if err != nil {
		return err
	}
	// The Secret's ca.crt must be the CA discovery made this node trust.
	boot, err := d.TLSBootstrapConfig(ctx)
	if err != nil {
		return err
	}
	var trustedCA []byte
	if cluster := currentCluster(boot); cluster != nil {
		trustedCA = cluster.CertificateAuthorityData
	}
	fmt.Fprintf(d.Out, "[download-certs] Downloading the certificates in Secret %q in the %q Namespace\n", copycerts.SecretName, "kube-system")
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout(d.Cfg.Timeouts))
	defer cancel()
	files := copycerts.Files(v.CertDir, v.Cfg.Etcd)
	if cis.Enabled(v.Cfg.FeatureGates) {
		for i := range files {
			files[i].Mode = cis.FileMode // certificates too
		}
	}
	opts := copycerts.DownloadOptions{Files: files, Key: d.CertificateKey, TrustedCA: trustedCA}
	if err := copycerts.Download(ctx, c, opts); err != nil {
		return fmt.Errorf("downloading the control-plane certificates: %w", err)
	}
	return nil
}

// sharedPKI are the files every control-plane node shares; a node must
// have them before it can make its own certificates.
func sharedPKI(external bool) []string {
	files := []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "sa.key", "sa.pub"}
	if !external {
		files = append(files, "etcd/ca.crt", "etcd/ca.key")
	}
	return files
}

func runCerts(ctx context.Context, d *Data) error {
	v, err := d.InitView(ctx)
	if err != nil {
		return err
	}
	if err := checkSharedPKI(v); err != nil {
		return err
	}
	return runInitPhase(ctx, d, initphases.CertsPhase())
}

// checkSharedPKI fails, naming every missing file, unless the files all
// control-plane nodes share are in v's certificate folder.
func checkSharedPKI(v *initphases.Data) error {
	var missing []string
	for _, f := range sharedPKI(v.Cfg.Etcd.External != nil) {
		if _, err := os.Stat(filepath.Join(v.CertDir, f)); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the cluster's shared certificates and keys are missing from %s: %v; join with --certificate-key (after \"kubeadm init phase upload-certs --upload-certs\" on a control-plane node) or copy them from one", v.CertDir, missing)
	}
	return nil
}

// runInitPhase runs an init phase on the init view of this node: its own
// Run, then its sub-phases in order (all of them, or those named in only),
// honouring RunIf; the "all" shortcuts are not run.
func runInitPhase(ctx context.Context, d *Data, p workflow.Phase[*initphases.Data], only ...string) error {
	v, err := d.InitView(ctx)
	if err != nil {
		return err
	}
	return workflow.RunTree(ctx, p, v, only)
}

// ControlPlaneJoinPhase marks a new control-plane node as such.
func ControlPlaneJoinPhase() workflow.Phase[*Data] {
	flags := withFlags("control-plane")
	return workflow.Phase[*Data]{
		Name:  "control-plane-join",
		Short: "Make this node a member of the control plane",
		RunIf: onlyControlPlane,
		Phases: []workflow.Phase[*Data]{
			// "all" also takes the flags upstream's does (its etcd step
			// moved to the etcd-join phase), so its scripts still run.
			{Name: "all", Short: "Run every control-plane-join step", RunAllSiblings: true,
				InheritFlags: withFlags("control-plane", "apiserver-advertise-address", "patches")},
			{
				Name:         "mark-control-plane",
				Short:        "Label and taint the node as a control-plane node",
				InheritFlags: flags,
				Run: func(ctx context.Context, d *Data) error {
					return runInitPhase(ctx, d, initphases.MarkControlPlanePhase())
				},
			},
		},
	}
}

// WaitControlPlanePhase waits for a new control-plane node's kubelet and
// its control-plane components to be healthy.
func WaitControlPlanePhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "wait-control-plane",
		Short:        "Wait until this node's control-plane components are healthy",
		InheritFlags: withFlags("control-plane"),
		RunIf:        onlyControlPlane,
		Run: func(ctx context.Context, d *Data) error {
			return runInitPhase(ctx, d, initphases.WaitControlPlanePhase())
		},
	}
}

// CertsRenewalPhase installs the daily certificate renewal on a new
// control-plane node, as init's phase of that name does (upstream kubeadm
// has no such phase).
func CertsRenewalPhase() workflow.Phase[*Data] {
	p := initphases.CertsRenewalPhase()
	return workflow.Phase[*Data]{
		Name:         p.Name,
		Short:        p.Short,
		Long:         p.Long,
		Example:      "  # Install the renewal timer on a control-plane node joined without it\n  kubeadm join phase certs-renewal --control-plane",
		InheritFlags: withFlags("control-plane"),
		RunIf:        onlyControlPlane,
		Run: func(ctx context.Context, d *Data) error {
			return runInitPhase(ctx, d, p)
		},
	}
}
