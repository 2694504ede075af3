package initphases

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// This file runs the control plane as host processes under the
// HostProcessControlPlane feature gate (package hostprocess,
// docs/decisions/013-host-process-control-plane.md).

// HostProcesses reports whether the control plane of d runs as systemd
// units instead of static Pods.
func HostProcesses(d *Data) bool { return hostprocess.Enabled(d.Cfg.FeatureGates) }

// units drives the node's units (those under SystemRoot).
func units(d *Data) hostprocess.Units {
	var host kubelet.Runner = kubelet.OSHost{}
	if d.InitSystem != nil {
		host = d.InitSystem
	}
	return hostprocess.Units{Host: host, Root: d.SystemRoot, Out: d.Out}
}

// unitDir is the folder the units go to, as printed.
func unitDir(d *Data) string {
	if d.DryRun {
		return d.DryRunDir
	}
	return filepath.Join(d.SystemRoot, hostprocess.UnitDir)
}

// InstallUnit writes the systemd unit of component, rendered from the same
// Pod its manifest would hold (BuildPod), with the program found in the
// PATH, and has systemd run it: reloaded, enabled and restarted when the
// unit changed, started otherwise. A unit that already holds the same
// bytes is left alone and a running component is not restarted, so the
// phase can run again. Under --dry-run the unit goes to the dry-run folder
// and nothing is started.
func InstallUnit(ctx context.Context, d *Data, component string) error {
	pod, err := BuildPod(d, component)
	if err != nil {
		return err
	}
	lookPath := exec.LookPath
	if d.LookPath != nil {
		lookPath = d.LookPath
	}
	binary, err := lookPath(component)
	if err != nil {
		return fmt.Errorf("finding the %s program in the PATH: %w", component, err)
	}
	if binary, err = filepath.Abs(binary); err != nil {
		return err
	}
	data, err := hostprocess.Unit(component, pod, binary)
	if err != nil {
		return err
	}
	if d.DryRun {
		p := filepath.Join(d.DryRunDir, hostprocess.UnitName(component))
		if err := atomicfile.Write(p, data, hostprocess.UnitMode); err != nil {
			return fmt.Errorf("writing the %s unit: %w", component, err)
		}
		fmt.Fprintf(d.Out, "[dryrun] Would write %s and run 'systemctl enable %s' and 'systemctl restart %s'\n",
			hostprocess.UnitPath(d.SystemRoot, component), hostprocess.UnitName(component), hostprocess.UnitName(component))
		return nil
	}
	u := units(d)
	changed, err := u.Write(component, data)
	if err != nil {
		return err
	}
	if err := u.Start(ctx, component, changed); err != nil {
		return fmt.Errorf("starting %s: %w", component, err)
	}
	return nil
}
