package initphases

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/rootless"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// rootlessGate is the feature gate that runs the control plane's static
// Pods as users of their own instead of root.
const rootlessGate = "RootlessControlPlane"

func rootlessEnabled(d *Data) bool { return d.Cfg.FeatureGates[rootlessGate] }

// RunAsNonRoot prepares the node for component to run as its own user when
// the RootlessControlPlane feature gate is on: the components' users and
// groups are made if missing, and the keys and kubeconfig files component
// reads given to its user. A dry run only says it would. Without the gate
// it does nothing. Idempotent.
//
// With the CISHardening feature gate, etcd runs as the user etcd instead
// (see hardenEtcd); the other components stay root's.
func RunAsNonRoot(d *Data, component string) error {
	if hardened(d) && component == staticpod.Etcd && d.Cfg.Etcd.Local != nil {
		return hardenEtcd(d)
	}
	if !rootlessEnabled(d) {
		return nil
	}
	if d.DryRun {
		prefix := "control-plane"
		if component == staticpod.Etcd {
			prefix = "etcd"
		}
		fmt.Fprintf(d.Out, "[%s] Would create the users and groups %s runs as instead of root\n", prefix, component)
		fmt.Fprintf(d.Out, "[%s] Would make the static Pod manifest of %s run as that user\n", prefix, component)
		return nil
	}
	if err := EnsureRootlessAccounts(d); err != nil {
		return err
	}
	node := rootless.Node{CertDir: d.CertDir, KubeconfigDir: d.KubeconfigDir, LocalEtcd: d.Cfg.Etcd.External == nil}
	if node.LocalEtcd {
		node.EtcdDataDir = d.Cfg.Etcd.Local.DataDir
	}
	if component == staticpod.KubeControllerManager {
		ext, err := usesExternalCA(d.CertDir)
		if err != nil {
			return err
		}
		node.ExternalCA = ext
	}
	return d.Rootless.Chown(component, node)
}

// EnsureRootlessAccounts makes the components' users and groups when the
// RootlessControlPlane feature gate is on and they are missing (not in a
// dry run), so that BuildManifest can name them. Idempotent.
func EnsureRootlessAccounts(d *Data) error {
	if !rootlessEnabled(d) || d.DryRun || d.Rootless != nil {
		return nil
	}
	a, err := rootless.Ensure(d.EtcDir)
	if err != nil {
		return fmt.Errorf("the control plane cannot run as non-root: %w", err)
	}
	d.Rootless = a
	return nil
}

// applyRootless sets the user pod runs as, when the gate is on and the
// users exist (made by RunAsNonRoot, or earlier); it changes nothing on
// disk. A dry run leaves the manifest as without the gate.
func applyRootless(d *Data, component string, pod *corev1.Pod) error {
	if hardened(d) && component == staticpod.Etcd {
		return applyEtcdUser(d, pod)
	}
	if !rootlessEnabled(d) || d.DryRun {
		return nil
	}
	a := d.Rootless
	if a == nil {
		found, err := rootless.Lookup(d.EtcDir)
		if err != nil {
			return fmt.Errorf("%s cannot run as non-root: %w", component, err)
		}
		if found == nil {
			return fmt.Errorf("%s cannot run as non-root: its user and group do not exist yet", component)
		}
		a, d.Rootless = found, found
	}
	return a.Apply(pod, component)
}

// PrepareNode makes this node ready for component's new manifest: the
// users and file owners of RunAsNonRoot and, with the CISHardening
// feature gate, the API server's audit policy, admission configuration and
// audit log folder. Init, join and upgrade call it before writing the
// manifest. Idempotent.
func PrepareNode(d *Data, component string) error {
	if err := RunAsNonRoot(d, component); err != nil {
		return err
	}
	if hardened(d) && component == staticpod.KubeAPIServer {
		return writeAPIServerFiles(d)
	}
	return nil
}
