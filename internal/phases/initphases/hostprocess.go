package initphases

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
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

// ProgramVersion is the version (no "v") component's program must report
// for d's configuration: the Kubernetes version, or etcd's image tag
// without its build suffix.
func ProgramVersion(d *Data, component string) string {
	tag := images.EtcdImage(&d.Cfg.ClusterConfiguration)
	return hostprocess.WantVersion(component, d.Cfg.KubernetesVersion, tag[strings.LastIndex(tag, ":")+1:])
}

// BuildUnit renders the systemd unit of component from the same Pod its
// manifest would hold (BuildPod), with the program of ProgramVersion found
// in the PATH (hostprocess.FindProgram), and returns it with the URL of
// the health endpoint the Pod's probes ask.
func BuildUnit(d *Data, component string) (data []byte, healthURL string, err error) {
	pod, err := BuildPod(d, component)
	if err != nil {
		return nil, "", err
	}
	lookPath := exec.LookPath
	if d.LookPath != nil {
		lookPath = d.LookPath
	}
	binary, err := hostprocess.FindProgram(lookPath, component, ProgramVersion(d, component))
	if err != nil {
		return nil, "", fmt.Errorf("finding the %s program: %w", component, err)
	}
	if data, err = hostprocess.Unit(component, pod, binary); err != nil {
		return nil, "", err
	}
	if healthURL, err = staticpod.HealthURL(pod); err != nil {
		return nil, "", fmt.Errorf("the health endpoint of %s: %w", component, err)
	}
	return data, healthURL, nil
}

// Units drives the node's units (those under SystemRoot).
func Units(d *Data) hostprocess.Units { return units(d) }

// InstallUnit writes the systemd unit of component (BuildUnit) and has
// systemd run it: reloaded, enabled and restarted when the unit changed,
// started otherwise. A unit that already holds the same bytes is left
// alone and a running component is not restarted, so the phase can run
// again. Under --dry-run the unit goes to the dry-run folder and nothing
// is started.
func InstallUnit(ctx context.Context, d *Data, component string) error {
	data, _, err := BuildUnit(d, component)
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
