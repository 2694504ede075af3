package upgradephases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/cri"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// ApplyPhases is the workflow of "kubeadm upgrade apply", in upstream
// kubeadm's order.
func ApplyPhases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		{
			Name:         "preflight",
			Short:        "Check the cluster and the version skew, ask for confirmation and pull the images",
			InheritFlags: []string{"config", "kubeconfig", "dry-run", "force", "yes", "ignore-preflight-errors", "allow-experimental-upgrades", "allow-release-candidate-upgrades", "etcd-upgrade"},
			Run:          runApplyPreflight,
		},
		controlPlanePhase("Upgrade the control plane"),
		{
			Name:  "upload-config",
			Short: "Store the upgraded kubeadm and kubelet configurations in ConfigMaps",
			Phases: []workflow.Phase[*Data]{
				{Name: "all", Short: "Store both configurations", RunAllSiblings: true, InheritFlags: []string{"config", "kubeconfig", "dry-run"}},
				{Name: "kubeadm", Short: "Store the ClusterConfiguration in the kubeadm-config ConfigMap", InheritFlags: []string{"config", "kubeconfig", "dry-run"}, Run: initRun(initphases.UploadConfigPhase(), "kubeadm")},
				{Name: "kubelet", Short: "Store the KubeletConfiguration in the kubelet-config ConfigMap", InheritFlags: []string{"config", "kubeconfig", "dry-run"}, Run: initRun(initphases.UploadConfigPhase(), "kubelet")},
			},
		},
		kubeconfigPhase(),
		kubeletConfigPhase(),
		{
			Name:         "bootstrap-token",
			Short:        "Refresh the RBAC rules of bootstrap tokens and the cluster-info ConfigMap",
			InheritFlags: []string{"config", "kubeconfig", "dry-run"},
			Run:          initRun(initphases.BootstrapTokenPhase()),
		},
		addonPhase(),
		postUpgradePhase(),
	}
}

// NodePhases is the workflow of "kubeadm upgrade node".
func NodePhases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		{
			Name:         "preflight",
			Short:        "Check privileges and pull the images of a control-plane node",
			InheritFlags: []string{"config", "kubeconfig", "dry-run", "ignore-preflight-errors"},
			Run:          runNodePreflight,
		},
		controlPlanePhase("Upgrade the control plane instance of this node, if any"),
		kubeconfigPhase(),
		kubeletConfigPhase(),
		addonPhase(),
		postUpgradePhase(),
	}
}

// initRun runs an init phase (only the named sub-phases, when given) on the
// init view of the node.
func initRun(p workflow.Phase[*initphases.Data], only ...string) func(context.Context, *Data) error {
	return func(ctx context.Context, d *Data) error {
		return workflow.RunTree(ctx, p, d.InitView(), only)
	}
}

func runApplyPreflight(ctx context.Context, d *Data) error {
	if err := runNodeChecks(ctx, d); err != nil {
		return err
	}
	fmt.Fprintln(d.Out, "[upgrade] Running cluster health checks")
	h := upgrade.Health{
		Client: d.Client, Cluster: &d.Cfg.ClusterConfiguration, ManifestDir: d.ManifestDir,
		DryRun: d.DryRun, Out: d.Out, Now: d.Now,
	}
	h.UnitRoot = d.SystemRoot
	h.CheckpointDir = selfhosting.CheckpointDir(d.KubernetesDir)
	if err := preflight.Run(ctx, h.ClusterHealthChecks(), d.IgnorePreflightErrors, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	if d.Policy != nil {
		fmt.Fprintf(d.Out, "[upgrade/versions] Cluster version: %s\n", d.Policy.Cluster)
		fmt.Fprintf(d.Out, "[upgrade/versions] kubeadm version: v%s\n", d.Policy.Kubeadm)
		fmt.Fprintf(d.Out, "[upgrade/versions] Target version: %s\n", d.Version())
		skew := d.Policy.Check()
		if err := skew.Err(d.Force); err != nil {
			return exitcode.PreflightError(err)
		}
		for _, e := range skew.Skippable {
			fmt.Fprintf(d.Err, "[upgrade/versions] WARNING: %v (going on: --force)\n", e)
		}
	}
	if err := confirm(d); err != nil {
		return err
	}
	return pullImages(ctx, d)
}

// runNodeChecks runs the checks of this machine that both upgrade apply
// and upgrade node run first, as upstream: privileges, then the system
// verification (kernel, cgroups) against the installed kubelet.
func runNodeChecks(ctx context.Context, d *Data) error {
	fmt.Fprintln(d.Out, "[upgrade/preflight] Running preflight checks")
	if d.CertDir != "" && carotation.Rotating(d.CertDir) {
		// Not ignorable: the upgraded controller manager would sign with
		// ca.crt, a trust bundle by now, and its signers refuse a bundle.
		return exitcode.PreflightError(fmt.Errorf("a CA rotation is under way on this node (%s holds the controller manager's signing CA): finish it before upgrading", filepath.Join(d.CertDir, carotation.Folder)))
	}
	if d.Cfg != nil && d.Node != nil && selfhosting.Enabled(d.Cfg.FeatureGates) && d.Node.ControlPlane && !d.Node.SelfHosted {
		// Not ignorable: the upgrade would write static Pod manifests
		// that the DaemonSets would then run a second time.
		return exitcode.PreflightError(fmt.Errorf("this cluster's control plane is self-hosted (feature gate %s), but this control-plane node has no checkpoints in %s: finish the pivot first (kubeadm alpha selfhosting pivot)", selfhosting.Gate, selfhosting.CheckpointDir(d.KubernetesDir)))
	}
	if d.Node != nil && d.Node.SelfHosted && len(d.Node.InManifestDir) > 0 {
		// Not ignorable: the new DaemonSet Pods would not get the ports.
		return exitcode.PreflightError(fmt.Errorf("the manifest folder %s holds manifests of %v beside their checkpoints: a checkpoint stands in for its DaemonSet Pod (wait until the checkpointer takes it away, see the logs of its Pod %s) or a pivot did not finish (run kubeadm alpha selfhosting pivot again)", d.ManifestDir, d.Node.InManifestDir, selfhosting.Checkpointer+"-"+d.Node.Name))
	}
	if err := preflight.Run(ctx, []preflight.Check{preflight.IsPrivilegedUser(d.Host)}, d.IgnorePreflightErrors, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	checks := []preflight.Check{preflight.SystemVerification(d.Host, preflight.InstalledKubelet(d.Host))}
	if err := preflight.Run(ctx, checks, d.IgnorePreflightErrors, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	return runHostProcessChecks(ctx, d)
}

func runNodePreflight(ctx context.Context, d *Data) error {
	if err := runNodeChecks(ctx, d); err != nil {
		return err
	}
	if !d.Node.ControlPlane {
		fmt.Fprintln(d.Out, "[upgrade/preflight] This node runs no control plane: no images to pull")
		return nil
	}
	return pullImages(ctx, d)
}

// confirm asks before apply changes anything, unless --yes, --force or
// --dry-run.
func confirm(d *Data) error {
	if d.Yes || d.Force || d.DryRun {
		return nil
	}
	if d.Confirm == nil || !d.Confirm(fmt.Sprintf("[upgrade] Upgrade the control plane to %s? [y/N]: ", d.Version())) {
		return errors.New("upgrade aborted: nothing was changed (answer y, or run it with --yes to upgrade without asking)")
	}
	return nil
}

// pullImages makes sure the control-plane images of the target version are
// on this node, as the pull policy says.
func pullImages(ctx context.Context, d *Data) error {
	if d.DryRun {
		fmt.Fprintln(d.Out, "[dryrun] Would pull the images of the target version")
		return nil
	}
	fmt.Fprintln(d.Out, "[upgrade/preflight] Pulling the images the upgraded control plane needs")
	rt, err := d.DialCRI(ctx, d.Cfg.NodeRegistration.CRISocket)
	if err != nil {
		return err
	}
	defer rt.Close()
	list := images.List(&d.Cfg.ClusterConfiguration)
	if d.Node != nil && d.Node.HostProcesses {
		list = images.WithoutControlPlane(&d.Cfg.ClusterConfiguration, list)
	}
	errs := cri.EnsureImages(ctx, rt, list, cri.PullOptions{
		Policy: corev1.PullPolicy(d.ImagePullPolicy), Serial: d.ImagePullSerial, Parallelism: 2, Attempts: 3,
	})
	if err := errors.Join(errs...); err != nil {
		return exitcode.PreflightError(fmt.Errorf("pulling the images of %s: %w", d.Version(), err))
	}
	return nil
}

func controlPlanePhase(short string) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "control-plane",
		Short:        short,
		InheritFlags: []string{"config", "kubeconfig", "dry-run", "etcd-upgrade", "certificate-renewal", "patches"},
		Run:          runControlPlane,
	}
}

// runControlPlane replaces this node's static Pod manifests with those of
// the target version, etcd first, with a backup and a rollback.
func runControlPlane(ctx context.Context, d *Data) error {
	if !d.Node.ControlPlane {
		fmt.Fprintln(d.Out, "[upgrade/control-plane] This node runs no control plane: nothing to upgrade")
		return nil
	}
	if d.Node.HostProcesses {
		return runHostProcesses(ctx, d)
	}
	if d.Node.SelfHosted {
		return runSelfHosted(ctx, d)
	}
	timeout := upgradeTimeout(d)
	fmt.Fprintf(d.Out, "[upgrade/control-plane] Upgrading the static Pod control plane of this node to %q (each component may take up to %v)\n", d.Version(), timeout)
	view := d.InitView()
	if err := initphases.EnsureRootlessAccounts(view); err != nil {
		return err
	}
	now := d.Now()
	manifests, etcdData, err := etcdManifest(ctx, d, view, now)
	if err != nil {
		return err
	}
	for _, comp := range staticpod.ControlPlaneComponents() {
		data, err := initphases.BuildManifest(view, comp)
		if err != nil {
			return err
		}
		manifests = append(manifests, upgrade.Manifest{Component: comp, Data: data, Before: beforeWrite(d, view, comp)})
	}
	if d.DryRun {
		for _, m := range manifests {
			dryRunFile(d, staticpod.ManifestPath(d.ManifestDir, m.Component), m.Data)
			if err := upgrade.KeepDryRunCopy(d.DryRunDir, m.Component+".yaml", m.Data, staticpod.FileMode); err != nil {
				return err
			}
		}
		return upgradeHardening(d, view)
	}
	rt, err := d.DialCRI(ctx, d.Cfg.NodeRegistration.CRISocket)
	if err != nil {
		return err
	}
	defer rt.Close()
	sp := staticPods(d, rt, now, timeout, etcdData)
	sp.Leaders = &leaderlease.Waiter{Client: d.Client, Timeout: healthCheckTimeout(d), Out: d.Out, Prefix: "[upgrade/staticpods]"}
	if err := sp.Apply(ctx, manifests); err != nil {
		return fmt.Errorf("[upgrade/control-plane] the control plane of this node was not upgraded: %w", err)
	}
	if d.CertRenewal && len(sp.Changed()) > 0 {
		renewAdminKubeconfigs(d)
	}
	if err := upgradeHardening(d, view); err != nil {
		return err
	}
	nodeDone(d, "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")
	return nil
}

// nodeDone prints one of the lines upstream's "upgrade node" ends a phase
// with (scripts may look for them); "upgrade apply" says nothing there.
func nodeDone(d *Data, line string) {
	if !d.Apply {
		fmt.Fprintln(d.Out, line)
	}
}

// dryRunFile shows a file a real run would write, as upstream's dry runs
// do: "[dryrun] Would write file PATH with content:", then the content as
// it is, so that a program can cut it out of the output.
func dryRunFile(d *Data, path string, data []byte) {
	fmt.Fprintf(d.Out, "[dryrun] Would write file %q with content:\n", path)
	d.Out.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(d.Out)
	}
}

// upgradeHardening brings, with the CISHardening feature gate, what the
// profile adds besides the components' manifests up to date: the modes of
// the certificates, and the kubelet serving certificate approver (its
// credential renewed along with the others, the kubeadm program it runs
// replaced by this one, its manifest rewritten). A dry run prints the
// approver's manifest. Without the gate it does nothing.
func upgradeHardening(d *Data, view *initphases.Data) error {
	if !cis.Enabled(d.Cfg.FeatureGates) {
		return nil
	}
	if d.DryRun {
		data, err := initphases.KubeletServingApproverManifest(view)
		if err != nil {
			return err
		}
		name := staticpod.KubeletServingApprover
		fmt.Fprintf(d.Out, "[dryrun] Would copy this kubeadm to %q and write the manifest of %q to %q:\n%s\n", cis.ApproverBinary, name, staticpod.ManifestPath(d.ManifestDir, name), data)
		return upgrade.KeepDryRunCopy(d.DryRunDir, name+".yaml", data, staticpod.FileMode)
	}
	if err := initphases.RestrictCertModes(view); err != nil {
		return err
	}
	return initphases.EnsureKubeletServingApprover(view, d.CertRenewal)
}

// staticPods upgrades this node's static Pods through rt, backing their
// manifests up under this run's folder (now names it) and etcd's data
// with etcdData.
func staticPods(d *Data, rt upgrade.Runtime, now time.Time, timeout time.Duration, etcdData *upgrade.EtcdData) *upgrade.StaticPods {
	return &upgrade.StaticPods{
		ManifestDir: d.ManifestDir,
		BackupDir:   upgrade.BackupDirName(d.TmpDir(), "manifests", now),
		NodeName:    d.Node.Name,
		Timeout:     timeout,
		Runtime:     rt,
		EtcdData:    etcdData,
		Out:         d.Out,
	}
}

// etcdManifest returns etcd's new manifest, as a list of none or one,
// when this node runs a local etcd that the upgrade moves and its image
// is newer than the running one, after backing up its data
// (backupEtcdData; no backup in a dry run).
func etcdManifest(ctx context.Context, d *Data, view *initphases.Data, now time.Time) ([]upgrade.Manifest, *upgrade.EtcdData, error) {
	if d.Cfg.Etcd.External != nil || !d.Node.LocalEtcd || !d.EtcdUpgrade {
		return nil, nil, nil
	}
	data, err := initphases.BuildManifest(view, staticpod.Etcd)
	if err != nil {
		return nil, nil, err
	}
	cur, err := staticpod.ReadManifest(staticpod.ManifestPath(d.ManifestDir, staticpod.Etcd))
	if err != nil {
		return nil, nil, err
	}
	curTag := upgrade.ImageTag(cur.Spec.Containers[0].Image)
	newTag := upgrade.ImageTag(images.EtcdImage(&d.Cfg.ClusterConfiguration))
	curV, err1 := upgrade.EtcdTagVersion(curTag)
	newV, err2 := upgrade.EtcdTagVersion(newTag)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, err
	}
	if !curV.LessThan(newV) {
		fmt.Fprintf(d.Out, "[upgrade/etcd] etcd runs %s and the target is %s: etcd is not upgraded\n", curTag, newTag)
		return nil, nil, nil
	}
	if d.DryRun {
		return []upgrade.Manifest{{Component: staticpod.Etcd, Data: data}}, nil, nil
	}
	backup, err := backupEtcdData(ctx, d, now)
	if err != nil {
		return nil, nil, err
	}
	return []upgrade.Manifest{{Component: staticpod.Etcd, Data: data, Before: beforeWrite(d, view, staticpod.Etcd)}}, backup, nil
}

// beforeWrite is what runs just before component's new manifest is
// written: its certificates renewed (see renewFor), then, with the
// RootlessControlPlane feature gate, the files it reads given back to its
// user (a renewed key is written by root; without the gate RunAsNonRoot
// does nothing).
func beforeWrite(d *Data, view *initphases.Data, component string) func() error {
	renew := renewFor(d, component)
	return func() error {
		if renew != nil {
			if err := renew(); err != nil {
				return err
			}
		}
		return initphases.PrepareNode(view, component)
	}
}

// renewFor renews the certificates a component uses, before its new
// manifest is written (when certificate renewal is on).
func renewFor(d *Data, component string) func() error {
	if !d.CertRenewal {
		return nil
	}
	var certs, kubeconfigs []string
	switch component {
	case staticpod.Etcd:
		certs = []string{"etcd-server", "etcd-peer", "etcd-healthcheck-client"}
	case staticpod.KubeAPIServer:
		certs = []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client"}
		if d.Cfg.Etcd.External == nil {
			certs = append(certs, "apiserver-etcd-client")
		}
	case staticpod.KubeControllerManager:
		kubeconfigs = []string{"controller-manager.conf"}
	case staticpod.KubeScheduler:
		kubeconfigs = []string{"scheduler.conf"}
	}
	return func() error {
		cluster := &d.Cfg.ClusterConfiguration
		opts := pki.Options{Now: d.Now}
		for _, name := range certs {
			c, ok := pki.LookupCert(name)
			if !ok {
				return fmt.Errorf("unknown certificate %q", name)
			}
			_, err := pki.RenewCert(cluster, d.CertDir, c, opts)
			if err := report(d, c.Name, err); err != nil {
				return err
			}
		}
		for _, file := range kubeconfigs {
			_, err := pki.RenewKubeconfigCert(cluster, filepath.Join(d.KubernetesDir, file), d.CertDir, opts)
			if err := report(d, file, err); err != nil {
				return err
			}
		}
		return nil
	}
}

// report prints the outcome of one renewal; an external CA or a missing
// file only warns, as upstream's upgrade does.
func report(d *Data, name string, err error) error {
	var ext *pki.ExternalCAError
	switch {
	case err == nil:
		fmt.Fprintf(d.Out, "[upgrade/staticpods] Renewed the certificate of %s\n", name)
	case errors.Is(err, pki.ErrMissing):
		fmt.Fprintf(d.Err, "[upgrade/staticpods] WARNING: %s is missing; it was not renewed\n", name)
	case errors.As(err, &ext):
		fmt.Fprintf(d.Out, "[upgrade/staticpods] External CA (%s is absent): %s was not renewed\n", ext.KeyPath, name)
	default:
		return fmt.Errorf("renewing %s: %w", name, err)
	}
	return nil
}

// renewAdminKubeconfigs renews admin.conf and super-admin.conf after the
// control plane was upgraded; failures only warn.
func renewAdminKubeconfigs(d *Data) {
	for _, file := range []string{"admin.conf", "super-admin.conf"} {
		_, err := pki.RenewKubeconfigCert(&d.Cfg.ClusterConfiguration, filepath.Join(d.KubernetesDir, file), d.CertDir, pki.Options{Now: d.Now})
		switch {
		case err == nil:
			fmt.Fprintf(d.Out, "[upgrade] Renewed the certificate of %s\n", file)
		case errors.Is(err, pki.ErrMissing):
		default:
			fmt.Fprintf(d.Err, "[upgrade] WARNING: renewing %s: %v\n", file, err)
		}
	}
}

// healthCheckTimeout is timeouts.controlPlaneComponentHealthCheck, or its
// default.
func healthCheckTimeout(d *Data) time.Duration {
	if to := d.Upgrade.Timeouts; to != nil && to.ControlPlaneComponentHealthCheck != nil && to.ControlPlaneComponentHealthCheck.Duration > 0 {
		return to.ControlPlaneComponentHealthCheck.Duration
	}
	return v1beta4.DefaultControlPlaneComponentHealthCheck
}

// upgradeTimeout is timeouts.upgradeManifests, or its default.
func upgradeTimeout(d *Data) time.Duration {
	if to := d.Upgrade.Timeouts; to != nil && to.UpgradeManifests != nil && to.UpgradeManifests.Duration > 0 {
		return to.UpgradeManifests.Duration
	}
	return v1beta4.DefaultUpgradeManifests
}

func kubeletConfigPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubelet-config",
		Short: "Rewrite this node's kubelet configuration from the cluster's",
		Long: `Rewrite /var/lib/kubelet/config.yaml from the kubelet-config ConfigMap with this
node's settings, after copying the previous file into a backup folder under
/etc/kubernetes/tmp. The kubelet reads it when it restarts: restart it after
upgrading its binary.

A node set up by an older kubeadm, which passed the container runtime's
socket as the kubelet flag --container-runtime-endpoint, gets the
/var/lib/kubelet/instance-config.yaml that kubeadm writes today, with that
socket; the post-upgrade phase then removes the flag. Once the node has
instance-config.yaml, the annotation kubeadm.alpha.kubernetes.io/cri-socket
that older kubeadm put on its Node is removed.`,
		InheritFlags: []string{"config", "kubeconfig", "dry-run", "patches"},
		Run:          runKubeletConfig,
	}
}

func runKubeletConfig(ctx context.Context, d *Data) error {
	if err := writeKubeletFiles(ctx, d); err != nil {
		return err
	}
	if err := upgradeAPIServerLB(d); err != nil {
		return err
	}
	if !d.Node.InstanceConfig {
		return nil // the annotation may still be all that names the socket
	}
	removed, err := upgrade.RemoveCRISocketAnnotation(ctx, d.Client, d.Node.Name)
	if err != nil {
		return err
	}
	if removed {
		fmt.Fprintf(d.Out, "[upgrade/kubelet-config] Removed the annotation %s from Node %q: instance-config.yaml gives the kubelet its CRI socket\n", upgrade.CRISocketAnnotation, d.Node.Name)
	}
	return nil
}

// upgradeAPIServerLB gives the node-local API server load balancer of a
// node that has one (NodeLocalAPILoadBalancer) the running kubeadm binary
// and the cluster's pause image; the binary's hash is in the manifest, so
// the kubelet restarts the Pod when either changed. It keeps the upstream
// the node prefers, read from the manifest it has.
func upgradeAPIServerLB(d *Data) error {
	installed, preferred, err := apilb.Installed(d.ManifestDir)
	if err != nil || !installed {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the kubeadm binary to run the API server load balancer: %w", err)
	}
	manifestDir := d.ManifestDir
	if d.DryRun {
		manifestDir = d.DryRunDir
	}
	return apilb.Install(apilb.InstallOptions{
		PodOptions: apilb.PodOptions{
			Image:         images.PauseImage(&d.Cfg.ClusterConfiguration),
			KubernetesDir: d.KubernetesDir,
			Preferred:     preferred,
		},
		ManifestDir: manifestDir,
		Source:      exe,
		DryRun:      d.DryRun,
		Out:         d.Out,
	})
}

// writeKubeletFiles writes this node's kubelet configuration (and, on a
// node set up by an older kubeadm, its instance-config.yaml).
func writeKubeletFiles(ctx context.Context, d *Data) error {
	k := d.Cfg.ComponentConfigs.Kubelet
	if k == nil {
		return errors.New("the cluster's configuration holds no KubeletConfiguration")
	}
	svc := kubelet.NewService(d.Service, d.Out)
	opts := kubelet.ConfigOptions{PatchesDir: d.PatchesDir, ResolvConf: svc.ResolvConf(ctx)}
	if cis.Enabled(d.Cfg.FeatureGates) {
		opts.Mode = cis.FileMode
	}
	if d.Node.CRISocket != "" {
		opts.CRISocket = d.Node.CRISocket
	}
	// A node set up by an older kubeadm passes the CRI socket as a flag
	// and has no instance-config.yaml: it gets one, as upstream writes it
	// (post-upgrade then drops the flag).
	newInstance := !d.Node.InstanceConfig && d.Cfg.NodeRegistration.CRISocket != ""
	if newInstance {
		opts.CRISocket = d.Cfg.NodeRegistration.CRISocket
	}
	if d.DryRun {
		doc, err := kubelet.Config(k, opts, d.Out)
		if err != nil {
			return err
		}
		dryRunFile(d, filepath.Join(d.KubeletDir, kubelet.ConfigFile), doc)
		if err := upgrade.KeepDryRunCopy(d.DryRunDir, kubelet.ConfigFile, doc, kubelet.FileMode); err != nil {
			return err
		}
		if newInstance {
			inst := kubelet.InstanceConfig(opts.CRISocket)
			dryRunFile(d, filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile), inst)
			if err := upgrade.KeepDryRunCopy(d.DryRunDir, kubelet.InstanceConfigFile, inst, kubelet.FileMode); err != nil {
				return err
			}
			d.Node.InstanceConfig = true // as the node would be, for post-upgrade's dry run
		}
		nodeDone(d, kubeletConfigDone)
		return nil
	}
	if newInstance {
		if err := kubelet.WriteInstanceConfig(d.KubeletDir, opts.CRISocket, d.Out); err != nil {
			return err
		}
		d.Node.InstanceConfig = true
	}
	res, err := upgrade.WriteKubeletConfig(d.KubeletDir, d.TmpDir(), k, opts, d.Out)
	if err != nil {
		return fmt.Errorf("upgrading the kubelet's configuration: %w", err)
	}
	if !res.Changed {
		fmt.Fprintln(d.Out, "[upgrade/kubelet-config] The kubelet's configuration is already up to date")
	} else if d.Apply {
		fmt.Fprintln(d.Out, "[upgrade/kubelet-config] The kubelet's configuration of this node was upgraded; restart the kubelet after upgrading its binary")
	}
	nodeDone(d, kubeletConfigDone)
	return nil
}

// kubeletConfigDone is the line upstream's "upgrade node" ends its
// kubelet-config phase with, whether the file changed or not.
const kubeletConfigDone = "[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!"

func addonPhase() workflow.Phase[*Data] {
	sub := func(name, short string, flags ...string) workflow.Phase[*Data] {
		return workflow.Phase[*Data]{
			Name: name, Short: short,
			InheritFlags: append([]string{"config", "kubeconfig", "dry-run"}, flags...),
			Run: func(ctx context.Context, d *Data) error {
				ok, err := addonsDue(ctx, d)
				if err != nil || !ok {
					return err
				}
				return workflow.RunTree(ctx, initphases.AddonPhase(), d.InitView(), []string{name})
			},
		}
	}
	return workflow.Phase[*Data]{
		Name:  "addon",
		Short: "Upgrade the essential addons: CoreDNS and kube-proxy",
		Long: `Upgrade CoreDNS and kube-proxy once every control-plane node runs the target
version; before that they are left alone (the last "kubeadm upgrade node" on
a control-plane node upgrades them).`,
		Phases: []workflow.Phase[*Data]{
			// --patches: "corednsdeployment" patches apply to CoreDNS,
			// "kubeproxydaemonset" ones to kube-proxy.
			{Name: "all", Short: "Upgrade every essential addon", RunAllSiblings: true, InheritFlags: []string{"config", "kubeconfig", "dry-run", "patches"}},
			sub("coredns", "Upgrade the CoreDNS addon (kube-dns with the feature gate CoreDNS=false)", "patches"),
			sub("kube-proxy", "Upgrade the kube-proxy addon", "patches"),
		},
	}
}

// addonsDue reports whether the addons may be upgraded: on a control-plane
// node, once every control-plane node's API server runs the target version.
func addonsDue(ctx context.Context, d *Data) (bool, error) {
	if !d.Node.ControlPlane {
		return false, nil
	}
	if d.DryRun {
		return true, nil
	}
	d.state = nil // the control plane changed since it was read
	s, err := d.ClusterState(ctx)
	if err != nil {
		return false, err
	}
	if behind := s.NodesNotAt(d.Version()); len(behind) > 0 {
		if !d.skipped {
			fmt.Fprintf(d.Out, "[upgrade/addon] The addons are upgraded once every control-plane node runs %s; not yet upgraded: %s\n", d.Version(), strings.Join(behind, ", "))
			d.skipped = true
		}
		return false, nil
	}
	return true, nil
}

// dropCRISocketFlag takes --container-runtime-endpoint out of
// kubeadm-flags.env, as upstream does after an upgrade: the kubelet reads
// its CRI socket from instance-config.yaml, and the flag would override it.
// It is left in place while there is no instance-config.yaml (when
// kubelet-config was skipped on a node that never had one), as the kubelet
// would otherwise lose its runtime.
func dropCRISocketFlag(d *Data) error {
	if !d.Node.InstanceConfig {
		if _, err := os.Stat(filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile)); err != nil {
			return nil
		}
	}
	_, _, err := upgrade.RemoveKubeletFlags(d.KubeletDir, d.TmpDir(), []string{kubelet.ContainerRuntimeEndpointFlag}, d.DryRun, d.DryRunDir, d.Out)
	if err != nil {
		return fmt.Errorf("removing the CRI socket flag of the kubelet: %w", err)
	}
	return nil
}

func postUpgradePhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "post-upgrade",
		Short: "Drop kubelet flags kubeadm no longer sets, and report the outcome of the upgrade",
		Long: `Remove --container-runtime-endpoint from /var/lib/kubelet/kubeadm-flags.env
once /var/lib/kubelet/instance-config.yaml gives the kubelet its container
runtime's socket (the previous file is copied into a backup folder under
/etc/kubernetes/tmp first), then report the outcome of the upgrade.`,
		InheritFlags: []string{"config", "kubeconfig", "dry-run"},
		Run: func(ctx context.Context, d *Data) error {
			if err := dropCRISocketFlag(d); err != nil {
				return err
			}
			// The lines of "upgrade apply" and the dry runs' are upstream's:
			// scripts grep them.
			switch {
			case d.DryRun:
				fmt.Fprintln(d.Out, "[upgrade/successful] Finished dryrunning successfully!")
			case d.Apply:
				fmt.Fprintf(d.Out, "\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to %q.\n\n", d.Version())
				fmt.Fprintln(d.Out, "[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.")
			default:
				fmt.Fprintln(d.Out, "[upgrade] The upgrade of this node is done; restart its kubelet after upgrading the kubelet's binary.")
			}
			return nil
		},
	}
}
