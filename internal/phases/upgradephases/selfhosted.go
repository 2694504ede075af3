package upgradephases

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// This file upgrades a self-hosted control plane (SelfHosting,
// docs/decisions/014): etcd stays a static Pod and is upgraded as on any
// node; the API server, the controller manager and the scheduler get their
// new manifests, built by the init phases, as checkpoints and DaemonSet
// templates (selfhosting.Node.Upgrade).

// runSelfHosted upgrades this node's self-hosted control plane: etcd
// first when it is local and due (after a snapshot and a copy of its
// data), then the checkpointer is brought to this kubeadm and the target's
// pause image, then the API server, the controller manager and the
// scheduler in turn. When one of them does not come up, those changed so
// far get their previous checkpoints and templates back, in reverse order
// (etcd keeps its new version: its data has moved on).
// A dry run prints the checkpoints it would write.
func runSelfHosted(ctx context.Context, d *Data) error {
	timeout := upgradeTimeout(d)
	fmt.Fprintf(d.Out, "[upgrade/control-plane] Upgrading the self-hosted control plane of this node to %q (each component may take up to %v)\n", d.Version(), timeout)
	view := d.InitView()
	now := d.Now()
	etcdManifests, etcdData, err := etcdManifest(ctx, d, view, now)
	if err != nil {
		return err
	}
	checkpointDir := selfhosting.CheckpointDir(d.KubernetesDir)
	type component struct {
		name string
		data []byte
	}
	var comps []component
	for _, name := range selfhosting.UpgradeOrder() {
		data, err := initphases.BuildManifest(view, name)
		if err != nil {
			return err
		}
		comps = append(comps, component{name, data})
	}
	if d.DryRun {
		for _, m := range etcdManifests {
			dryRunFile(d, staticpod.ManifestPath(d.ManifestDir, m.Component), m.Data)
			if err := upgrade.KeepDryRunCopy(d.DryRunDir, m.Component+".yaml", m.Data, staticpod.FileMode); err != nil {
				return err
			}
		}
		for _, c := range comps {
			dryRunFile(d, selfhosting.CheckpointPath(checkpointDir, c.name), c.data)
			fmt.Fprintf(d.Out, "[dryrun] Would update DaemonSet kube-system/%s from it and wait for its new Pod\n", selfhosting.DaemonSetName(c.name))
			if err := upgrade.KeepDryRunCopy(d.DryRunDir, c.name+".yaml", c.data, staticpod.FileMode); err != nil {
				return err
			}
		}
		return nil
	}
	etcdChanged := false
	if len(etcdManifests) > 0 {
		rt, err := d.DialCRI(ctx, d.Cfg.NodeRegistration.CRISocket)
		if err != nil {
			return err
		}
		sp := staticPods(d, rt, now, timeout, etcdData)
		err = sp.Apply(ctx, etcdManifests)
		rt.Close()
		if err != nil {
			return fmt.Errorf("[upgrade/control-plane] the control plane of this node was not upgraded: %w", err)
		}
		etcdChanged = len(sp.Changed()) > 0
	}
	node := selfhosting.ForNode(selfhosting.NodeOptions{
		Client:        d.Client,
		Cluster:       &d.Cfg.ClusterConfiguration,
		NodeName:      d.Node.Name,
		KubernetesDir: d.KubernetesDir,
		ManifestDir:   d.ManifestDir,
		Timeout:       timeout,
		Out:           d.Out,
	})
	if err := node.InstallCheckpointer(); err != nil {
		return fmt.Errorf("updating the checkpointer: %w", err)
	}
	type done struct {
		name string
		old  []byte
	}
	var changed []done
	for _, c := range comps {
		if !sameFile(selfhosting.CheckpointPath(checkpointDir, c.name), c.data) {
			if err := beforeWrite(d, view, c.name)(); err != nil {
				return err
			}
		}
		old, ok, err := node.Upgrade(ctx, c.name, c.data)
		if ok {
			changed = append(changed, done{c.name, old})
		}
		if err == nil {
			continue
		}
		cerr := &upgrade.ComponentError{Component: c.name, Err: err}
		var rerrs []error
		for i := len(changed) - 1; i >= 0; i-- {
			fmt.Fprintf(d.Out, "[upgrade/self-hosted] Rolling %s back to its previous checkpoint and template\n", changed[i].name)
			if _, _, err := node.Upgrade(ctx, changed[i].name, changed[i].old); err != nil {
				rerrs = append(rerrs, fmt.Errorf("%s: %w", changed[i].name, err))
			}
		}
		cerr.RollbackErr = errors.Join(rerrs...)
		return fmt.Errorf("[upgrade/control-plane] the control plane of this node was not upgraded: %w", cerr)
	}
	if d.CertRenewal && (etcdChanged || len(changed) > 0) {
		renewAdminKubeconfigs(d)
	}
	if err := upgradeHardening(d, view); err != nil {
		return err
	}
	nodeDone(d, "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")
	return nil
}

// sameFile reports whether the file at path holds data.
func sameFile(path string, data []byte) bool {
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	return err == nil && string(old) == string(data)
}
