package initphases

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// PreflightPhase checks the machine before anything is written: root
// privileges first (nothing else runs without them), then every other
// check of "kubeadm init", then the image pull (only announced under
// --dry-run). Failed checks end the run with exit code 2. The phase only
// inspects the machine, apart from pulling images, so it can run any
// number of times.
func PreflightPhase() workflow.Phase[*Data] {
	return preflightPhase(preflight.NewHost)
}

// preflightPhase is PreflightPhase with the machine injected.
func preflightPhase(newHost func() preflight.Host) workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "preflight",
		Short: "Check that this machine can become a control-plane node",
		Long: `Check that this machine can become a control-plane node: privileges, CPUs
and memory, free ports, leftover files, the container runtime, the kubelet,
kernel and cgroup support, and then pull the control-plane images.`,
		Example: `  # Check this machine with the settings of a configuration file
  kubeadm init phase preflight --config kubeadm.yaml`,
		InheritFlags: []string{"config", "cri-socket", "dry-run", "ignore-preflight-errors", "image-repository"},
		Run: func(ctx context.Context, d *Data) error {
			return runPreflight(ctx, d, newHost())
		},
	}
}

func runPreflight(ctx context.Context, d *Data, h preflight.Host) error {
	fmt.Fprintln(d.Out, "[preflight] Running pre-flight checks")
	ignore := d.IgnorePreflightErrors
	if err := preflight.Run(ctx, []preflight.Check{preflight.IsPrivilegedUser(h)}, ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	// Under --dry-run the manifests go to a temporary folder, but the
	// question is whether the real ones are in the way.
	manifestDir := d.ManifestDir
	if d.DryRun || manifestDir == "" {
		manifestDir = ManifestsDir
	}
	if err := preflight.Run(ctx, preflight.InitChecks(h, d.Cfg, manifestDir), ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	if d.DryRun {
		fmt.Fprintln(d.Out, "[preflight] Would pull the required images (as 'kubeadm config images pull' does)")
		return nil
	}
	fmt.Fprintln(d.Out, "[preflight] Pulling the images a Kubernetes control plane needs")
	fmt.Fprintln(d.Out, "[preflight] Depending on your connection this can take a minute or two")
	fmt.Fprintln(d.Out, "[preflight] To fetch them ahead of time, run 'kubeadm config images pull'")
	pull := preflight.InitImagePull(h, d.Cfg, klog.Warningf)
	if err := preflight.Run(ctx, []preflight.Check{pull}, ignore, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	return nil
}
