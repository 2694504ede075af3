package upgradephases

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// This file upgrades a control plane of host processes
// (HostProcessControlPlane, docs/decisions/013): the units take the place
// of the manifests, built by the init phases from the same Pods, and
// systemd restarts each in turn with a rollback (upgrade.HostUnits).

// hostProcessChecks are the checks of the programs the upgraded units
// run: each component's program of the target version is in the PATH
// (under its versioned name or its bare one) and reports that version;
// etcd's only when its upgrade is due.
func hostProcessChecks(ctx context.Context, d *Data) ([]preflight.Check, error) {
	view := d.InitView()
	var checks []preflight.Check
	if d.Cfg.Etcd.External == nil && d.Node.LocalEtcd && d.EtcdUpgrade {
		due, _, err := etcdUnitDue(ctx, d, view)
		if err != nil {
			return nil, err
		}
		if due {
			checks = append(checks, preflight.ControlPlaneBinary(d.Host, hostprocess.Etcd, initphases.ProgramVersion(view, hostprocess.Etcd)))
		}
	}
	for _, c := range hostprocess.Components()[1:] {
		checks = append(checks, preflight.ControlPlaneBinary(d.Host, c, initphases.ProgramVersion(view, c)))
	}
	return checks, nil
}

// runHostProcessChecks runs hostProcessChecks on a node whose control
// plane runs as units.
func runHostProcessChecks(ctx context.Context, d *Data) error {
	if d.Node == nil || !d.Node.HostProcesses {
		return nil
	}
	checks, err := hostProcessChecks(ctx, d)
	if err != nil {
		return exitcode.PreflightError(err)
	}
	if err := preflight.Run(ctx, checks, d.IgnorePreflightErrors, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	return nil
}

// etcdUnitDue reports whether the local etcd's unit is due for an
// upgrade: the program it runs reports an older version than the target's
// (as the static Pod upgrade compares image tags). current is the running
// program's version.
func etcdUnitDue(ctx context.Context, d *Data, view *initphases.Data) (due bool, current string, err error) {
	p := hostprocess.UnitPath(d.SystemRoot, hostprocess.Etcd)
	pod, ours, err := hostprocess.ReadUnit(p, hostprocess.Etcd)
	if err != nil {
		return false, "", err
	}
	if !ours {
		return false, "", fmt.Errorf("%s was not written by kubeadm", p)
	}
	program := pod.Spec.Containers[0].Command[0]
	out, err := d.Host.Command(ctx, program, hostprocess.VersionArgs()...)
	if err != nil {
		return false, "", fmt.Errorf("asking the version of the etcd program %s that runs: %w", program, err)
	}
	current, err = hostprocess.ParseVersion(hostprocess.Etcd, out)
	if err != nil {
		return false, "", err
	}
	target := initphases.ProgramVersion(view, hostprocess.Etcd)
	curV, err1 := utilversion.ParseGeneric(current)
	newV, err2 := utilversion.ParseGeneric(target)
	if err := errors.Join(err1, err2); err != nil {
		return false, "", fmt.Errorf("comparing etcd versions: %w", err)
	}
	return curV.LessThan(newV), current, nil
}

// runHostProcesses upgrades this node's units: etcd first when it is
// local and due, after a snapshot and a copy of its data, then the API
// server, the controller manager and the scheduler. A dry run prints the
// units it would write.
func runHostProcesses(ctx context.Context, d *Data) error {
	timeout := upgradeTimeout(d)
	view := d.InitView()
	fmt.Fprintf(d.Out, "[upgrade/control-plane] Upgrading the systemd units of this node's control plane to %q (each component may take up to %v)\n", d.Version(), timeout)
	now := d.Now()
	var units []upgrade.Unit
	var etcdData *upgrade.EtcdData
	if d.Cfg.Etcd.External == nil && d.Node.LocalEtcd && d.EtcdUpgrade {
		due, current, err := etcdUnitDue(ctx, d, view)
		if err != nil {
			return err
		}
		if due {
			u, err := buildUnit(d, view, hostprocess.Etcd)
			if err != nil {
				return err
			}
			if !d.DryRun {
				if etcdData, err = backupEtcdData(ctx, d, now); err != nil {
					return err
				}
			}
			units = append(units, u)
		} else {
			fmt.Fprintf(d.Out, "[upgrade/etcd] etcd runs %s and the target is %s: etcd is not upgraded\n", current, initphases.ProgramVersion(view, hostprocess.Etcd))
		}
	}
	for _, c := range hostprocess.Components()[1:] {
		u, err := buildUnit(d, view, c)
		if err != nil {
			return err
		}
		units = append(units, u)
	}
	if d.DryRun {
		for _, u := range units {
			dryRunFile(d, hostprocess.UnitPath(d.SystemRoot, u.Component), u.Data)
			if err := upgrade.KeepDryRunCopy(d.DryRunDir, hostprocess.UnitName(u.Component), u.Data, hostprocess.UnitMode); err != nil {
				return err
			}
		}
		return nil
	}
	hu := &upgrade.HostUnits{
		Units:     initphases.Units(view),
		BackupDir: upgrade.BackupDirName(d.TmpDir(), "units", now),
		Timeout:   timeout,
		EtcdData:  etcdData,
		RestartKubelet: func(ctx context.Context) {
			kubelet.NewService(d.Service, d.Out).Restart(ctx)
		},
		Leaders: &leaderlease.Waiter{Client: d.Client, Timeout: healthCheckTimeout(d), Out: d.Out, Prefix: "[upgrade/units]"},
		Out:     d.Out,
	}
	if err := hu.Apply(ctx, units); err != nil {
		return fmt.Errorf("[upgrade/control-plane] the control plane of this node was not upgraded: %w", err)
	}
	if d.CertRenewal && len(hu.Changed()) > 0 {
		renewAdminKubeconfigs(d)
	}
	nodeDone(d, "[upgrade/control-plane] The control plane instance for this node was successfully upgraded!")
	return nil
}

// buildUnit is component's new unit, built as init builds it, with the
// certificates renewed just before it is written.
func buildUnit(d *Data, view *initphases.Data, component string) (upgrade.Unit, error) {
	data, url, err := initphases.BuildUnit(view, component)
	if err != nil {
		return upgrade.Unit{}, err
	}
	return upgrade.Unit{Component: component, Data: data, HealthURL: url, Before: beforeWrite(d, view, component)}, nil
}

// backupEtcdData takes a snapshot of etcd through its API, counts its
// cluster's members and copies its data folder, before etcd's manifest or
// unit changes. The answer tells the rollback what to put back.
func backupEtcdData(ctx context.Context, d *Data, now time.Time) (*upgrade.EtcdData, error) {
	dir := upgrade.BackupDirName(d.TmpDir(), "etcd", now)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if d.EtcdSnapshot != nil {
		snap := filepath.Join(dir, "snapshot.db")
		fmt.Fprintf(d.Out, "[upgrade/etcd] Taking a snapshot of etcd through its API into %q\n", snap)
		if err := d.EtcdSnapshot(ctx, d, snap); err != nil {
			return nil, fmt.Errorf("taking a snapshot of etcd before its upgrade: %w", err)
		}
	}
	backup := &upgrade.EtcdData{
		Backup:  filepath.Join(dir, "etcd"),
		DataDir: d.Cfg.Etcd.Local.DataDir,
		Stamp:   now.Format("2006-01-02-15-04-05"),
		// The copy is root's: give it back to etcd's user, when it has one.
		Chown: func() error { return initphases.RunAsNonRoot(d.InitView(), staticpod.Etcd) },
		Out:   d.Out,
	}
	if d.EtcdMembers != nil {
		n, err := d.EtcdMembers(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("counting etcd's members before its upgrade (a rollback puts the data of a single member back): %w", err)
		}
		backup.Members = n
	}
	fmt.Fprintf(d.Out, "[upgrade/etcd] Copying etcd's data folder %q to %q\n", backup.DataDir, backup.Backup)
	if err := etcd.CopyTree(backup.DataDir, backup.Backup); err != nil {
		return nil, fmt.Errorf("backing up etcd's data before its upgrade: %w", err)
	}
	return backup, nil
}
