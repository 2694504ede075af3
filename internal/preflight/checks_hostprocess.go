package preflight

import (
	"context"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// systemdRunDir exists when systemd booted the machine.
const systemdRunDir = "/run/systemd/system"

// HostProcessChecks are the checks of a control plane of host processes
// (the HostProcessControlPlane feature gate): systemd runs the machine, no
// unit file is in the way of kubeadm's, and each component's program is
// in the PATH with the version the cluster runs. Components are those of
// hostprocess.Components, etcd left out with an external etcd.
func HostProcessChecks(h Host, cfg *kubeadm.ClusterConfiguration) []Check {
	checks := []Check{HostProcessInitSystem(h)}
	etcdTag := images.EtcdImage(cfg)
	etcdTag = etcdTag[strings.LastIndex(etcdTag, ":")+1:]
	for _, c := range hostprocess.Components() {
		if c == hostprocess.Etcd && cfg.Etcd.External != nil {
			continue
		}
		checks = append(checks,
			FileAvailable(h, hostprocess.UnitPath("", c)),
			ControlPlaneBinary(h, c, hostprocess.WantVersion(c, cfg.KubernetesVersion, etcdTag)))
	}
	return checks
}

// HostProcessInitSystem fails unless systemd runs the machine.
func HostProcessInitSystem(h Host) Check {
	return Check{Name: "HostProcessInitSystem", Run: func(context.Context) Result {
		if _, err := h.Stat(systemdRunDir); err != nil {
			return fail("the HostProcessControlPlane feature gate runs the control plane as systemd units, and systemd does not run this machine (%s is missing)", systemdRunDir)
		}
		return Result{}
	}}
}

// ControlPlaneBinary fails unless component's program is in the PATH,
// under its versioned name or its bare one (hostprocess.ProgramNames), and
// reports version (no "v") for --version.
func ControlPlaneBinary(h Host, component, version string) Check {
	return Check{Name: "ControlPlaneBinary-" + component, Run: func(ctx context.Context) Result {
		path, err := hostprocess.FindProgram(h.LookPath, component, version)
		if err != nil {
			return fail("%s was not found in the system path as %s or %s: install it (version %s) as you installed the kubelet", component, component+"-v"+version, component, version)
		}
		out, err := h.Command(ctx, path, hostprocess.VersionArgs()...)
		if err != nil {
			return fail("%s --version: %v", path, err)
		}
		got, err := hostprocess.ParseVersion(component, out)
		if err != nil {
			return fail("%v", err)
		}
		if got != version {
			return fail("%s is version %s; the cluster needs %s", path, got, version)
		}
		return Result{}
	}}
}
