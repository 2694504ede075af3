package initphases

import (
	"context"
	"fmt"
	"os"

	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// etcdDataDirMode is the mode of the etcd data folder when it is created.
const etcdDataDirMode os.FileMode = 0o700

// EtcdPhase writes the static Pod manifest of the local etcd member. It is
// a group with the single sub-phase "local" (and no "all"), as upstream.
func EtcdPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "etcd",
		Short: "Write the static Pod manifest of the local etcd",
		Long:  "Write the static Pod manifest of the etcd member that runs on this node.",
		Phases: []workflow.Phase[*Data]{{
			Name:  "local",
			Short: "Write the static Pod manifest of a local etcd with a single member",
			Long: `Write the static Pod manifest of a local etcd with a single member, which the
kubelet starts. Nothing is done when the configuration uses an external etcd.
The etcd data folder is created (mode 0700) if missing. A manifest that is
already right is left untouched.`,
			Example: `  # Write the etcd manifest as "kubeadm init" would
  kubeadm init phase etcd local

  # Write it from a configuration file
  kubeadm init phase etcd local --config kubeadm.yaml`,
			InheritFlags: []string{"cert-dir", "config", "dry-run", "image-repository", "patches"},
			Run:          runEtcdLocal,
		}},
	}
}

// runEtcdLocal writes etcd.yaml. Idempotent: the data folder is only
// created when missing and the manifest only rewritten when it changes.
func runEtcdLocal(ctx context.Context, d *Data) error {
	cfg := d.Cfg
	if cfg.Etcd.External != nil {
		klog.V(1).Infof("[etcd] The configuration uses an external etcd; no local etcd manifest is written")
		return nil
	}
	dataDir := cfg.Etcd.Local.DataDir
	if d.DryRun {
		fmt.Fprintf(d.Out, "[etcd] Would ensure that %q directory is present\n", dataDir)
	} else if err := os.MkdirAll(dataDir, etcdDataDirMode); err != nil {
		return fmt.Errorf("creating the etcd data folder: %w", err)
	}
	if HostProcesses(d) {
		fmt.Fprintf(d.Out, "[etcd] Creating the systemd unit for local etcd in %q\n", unitDir(d))
		if err := PrepareNode(d, staticpod.Etcd); err != nil {
			return err
		}
		return InstallUnit(ctx, d, staticpod.Etcd)
	}
	fmt.Fprintf(d.Out, "[etcd] Creating static Pod manifest for local etcd in %q\n", d.ManifestDir)
	if err := PrepareNode(d, staticpod.Etcd); err != nil {
		return err
	}
	data, err := BuildManifest(d, staticpod.Etcd)
	if err != nil {
		return err
	}
	if err := writeStaticManifest(d, staticpod.Etcd, data); err != nil {
		return err
	}
	return showDryRunManifest(d, staticpod.Etcd)
}
