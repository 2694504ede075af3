package initphases

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/patches"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Flags of "kubeadm init" each control-plane sub-command accepts, as
// upstream's do; "all" takes them all. The *-extra-args flags are hidden
// and deprecated, as upstream's.
func apiServerFlags() []string {
	return []string{
		"apiserver-advertise-address", "apiserver-bind-port", "cert-dir", "config",
		"control-plane-endpoint", "dry-run", "feature-gates", "image-repository",
		"kubernetes-version", "patches", "service-cidr", "apiserver-extra-args",
	}
}

func controllerManagerFlags() []string {
	return []string{
		"cert-dir", "config", "dry-run", "image-repository", "kubernetes-version",
		"patches", "pod-network-cidr", "controller-manager-extra-args",
	}
}

func schedulerFlags() []string {
	return []string{"cert-dir", "config", "dry-run", "image-repository", "kubernetes-version", "patches", "scheduler-extra-args"}
}

func allControlPlaneFlags() []string {
	return []string{
		"apiserver-advertise-address", "apiserver-bind-port", "cert-dir", "config",
		"control-plane-endpoint", "dry-run", "feature-gates", "image-repository",
		"kubernetes-version", "patches", "pod-network-cidr", "service-cidr",
		"apiserver-extra-args", "controller-manager-extra-args", "scheduler-extra-args",
	}
}

// ControlPlanePhase writes the static Pod manifests of the API server, the
// controller manager and the scheduler.
func ControlPlanePhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "control-plane",
		Short: "Write the static Pod manifests of the control plane",
		Long: `Write the static Pod manifests of the API server, the controller manager and
the scheduler, which the kubelet starts.`,
		Run: func(_ context.Context, d *Data) error {
			if HostProcesses(d) {
				fmt.Fprintf(d.Out, "[control-plane] Using the systemd unit folder %q (HostProcessControlPlane)\n", unitDir(d))
				return nil
			}
			fmt.Fprintf(d.Out, "[control-plane] Using manifest folder %q\n", d.ManifestDir)
			return nil
		},
		Phases: []workflow.Phase[*Data]{
			{
				Name:  "all",
				Short: "Write every control-plane static Pod manifest",
				Example: `  # Write the control-plane manifests as "kubeadm init" would
  kubeadm init phase control-plane all

  # Write them from a configuration file
  kubeadm init phase control-plane all --config kubeadm.yaml`,
				RunAllSiblings: true,
				InheritFlags:   allControlPlaneFlags(),
			},
			controlPlaneComponentPhase("apiserver", staticpod.KubeAPIServer, apiServerFlags()),
			controlPlaneComponentPhase("controller-manager", staticpod.KubeControllerManager, controllerManagerFlags()),
			controlPlaneComponentPhase("scheduler", staticpod.KubeScheduler, schedulerFlags()),
		},
	}
}

func controlPlaneComponentPhase(name, component string, flags []string) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  name,
		Short: fmt.Sprintf("Write the %s static Pod manifest", component),
		Long: fmt.Sprintf(`Write the %s static Pod manifest into the manifest folder, with the
user's patches applied. A manifest that is already right is left untouched.`, component),
		InheritFlags: flags,
		Run: func(ctx context.Context, d *Data) error {
			return runControlPlaneComponent(ctx, d, component)
		},
	}
}

// runControlPlaneComponent writes the manifest of component. Idempotent.
//
// With the CISHardening feature gate, the API server's audit policy,
// admission configuration and audit log folder are made first, and the
// kubelet serving certificate approver (the job the controller manager
// leaves undone) is set up after the controller manager.
//
// With the HostProcessControlPlane feature gate, the component's systemd
// unit is written and started instead of its manifest (see InstallUnit).
func runControlPlaneComponent(ctx context.Context, d *Data, component string) error {
	if HostProcesses(d) {
		fmt.Fprintf(d.Out, "[control-plane] Creating the systemd unit for %q\n", component)
	} else {
		fmt.Fprintf(d.Out, "[control-plane] Creating static Pod manifest for %q\n", component)
	}
	if err := PrepareNode(d, component); err != nil {
		return err
	}
	if HostProcesses(d) {
		if err := InstallUnit(ctx, d, component); err != nil {
			return err
		}
	} else {
		data, err := BuildManifest(d, component)
		if err != nil {
			return err
		}
		if err := writeStaticManifest(d, component, data); err != nil {
			return err
		}
	}
	// With NodeLocalAPILoadBalancer, every node runs the balancer; on a
	// control-plane node it prefers the API server next to it.
	if component == staticpod.KubeAPIServer && APIServerLBEnabled(d) {
		local := LocalAPIServer(d)
		return InstallAPIServerLB(d, []string{local}, local)
	}
	if component == staticpod.KubeControllerManager {
		return EnsureKubeletServingApprover(d, false)
	}
	return nil
}

// BuildManifest renders the static Pod manifest of component (a
// control-plane component or etcd) for the node of d, the user's patches
// applied, as the init phases write it. Upgrades compare and write the
// same bytes.
func BuildManifest(d *Data, component string) ([]byte, error) {
	pod, err := BuildPod(d, component)
	if err != nil {
		return nil, err
	}
	return staticpod.Marshal(pod)
}

// BuildPod is the static Pod of component that BuildManifest serialises;
// the units of a control plane of host processes are made from it too.
func BuildPod(d *Data, component string) (*corev1.Pod, error) {
	opts := staticpod.HostOptions(klog.Warningf)
	if component == staticpod.KubeControllerManager {
		ext, err := usesExternalCA(d.CertDir)
		if err != nil {
			return nil, err
		}
		opts.ExternalCA = ext
	}
	cfg := d.Cfg
	node := staticpod.NodeOf(cfg)
	node.EtcdInitialCluster = d.EtcdInitialCluster
	pod, err := staticpod.Build(component, &cfg.ClusterConfiguration, node, opts)
	if err != nil {
		return nil, err
	}
	if err := applyRootless(d, component, pod); err != nil {
		return nil, err
	}
	if d.PatchesDir != "" {
		set, err := loadPatches(d)
		if err != nil {
			return nil, fmt.Errorf("patching the %s manifest: %w", component, err)
		}
		if pod, err = staticpod.Patch(component, pod, set, d.Out); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// writeStaticManifest writes the manifest of component, leaving a manifest with
// the same content alone.
func writeStaticManifest(d *Data, component string, data []byte) error {
	written, err := staticpod.WriteManifest(d.ManifestDir, component, data)
	if err != nil {
		return err
	}
	if !written {
		klog.V(1).Infof("[%s] %s already holds this manifest; left untouched", component, staticpod.ManifestPath(d.ManifestDir, component))
	}
	return nil
}

// loadPatches reads the patches folder. Each static Pod phase reads it
// anew (and so repeats the "[patches]" listing), where upstream reads it
// once per command: sharing one Set would need a field in Data.
func loadPatches(d *Data) (*patches.Set, error) {
	return patches.Load(d.PatchesDir, d.Out)
}

// usesExternalCA reports whether the cluster CA certificate in certDir is
// usable while its key is absent: the CA is managed outside this node and
// the controller manager must not sign certificates.
func usesExternalCA(certDir string) (bool, error) {
	if _, err := pki.LoadCert(pki.CertPath(certDir, "ca")); err != nil {
		return false, nil
	}
	keyPath := pki.KeyPath(certDir, "ca")
	switch _, err := os.Stat(keyPath); {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	default:
		return false, fmt.Errorf("checking for the cluster CA key: %w", err)
	}
}
