package upgradephases

import (
	"context"
	"fmt"
	"io"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// DiffRequest is what "kubeadm upgrade diff" was asked.
type DiffRequest struct {
	Env     config.Environment
	Upgrade *kubeadm.UpgradeConfiguration
	Client  kubernetes.Interface
	// Target is the version to compare with, resolved.
	Target string
	// ContextLines is how many unchanged lines surround each change.
	ContextLines int
	Out, Err     io.Writer
}

// Diff prints, as unified diffs, how "upgrade apply" to r.Target would
// change this node's manifests of kube-apiserver, kube-controller-manager
// and kube-scheduler, or their units on a node of host processes, or, on
// a self-hosted control plane, their checkpoints (from which the
// DaemonSets are made). It changes nothing.
func Diff(ctx context.Context, r DiffRequest) error {
	up := r.Upgrade
	d := &Data{
		Upgrade: up, KubernetesDir: initphases.KubernetesDir, ManifestDir: initphases.ManifestsDir, KubeletDir: initphases.KubeletDir,
		Out: io.Discard, Err: r.Err, ImagePullPolicy: string(up.Apply.ImagePullPolicy), ImagePullSerial: ptr.Deref(up.Apply.ImagePullSerial, true),
	}
	var err error
	if d.Node, err = upgrade.ReadLocalNode(d.KubernetesDir, d.ManifestDir, d.KubeletDir); err != nil {
		return err
	}
	if err := d.Node.ReadUnits(d.SystemRoot); err != nil {
		return err
	}
	if err := d.Node.ReadCheckpoints(d.KubernetesDir, d.ManifestDir); err != nil {
		return err
	}
	cluster, err := upgrade.FetchClusterConfig(ctx, r.Client, up.Timeouts, io.Discard, false)
	if err != nil {
		return err
	}
	if d.Cfg, err = d.nodeConfig(ctx, r.Env, cluster, r.Target); err != nil {
		return err
	}
	d.CertDir = d.Cfg.CertificatesDir
	return diffFiles(d, r.Out, r.ContextLines)
}

// diffFiles prints the unified diffs of Diff for the node d describes:
// each file as it is on disk against the one the upgrade would write,
// built as the upgrade builds it (a unit names the target version's
// program found in the PATH).
func diffFiles(d *Data, out io.Writer, contextLines int) error {
	view := d.InitView()
	for _, comp := range staticpod.ControlPlaneComponents() {
		path, to := staticpod.ManifestPath(d.ManifestDir, comp), "new manifest"
		build := func() ([]byte, error) { return initphases.BuildManifest(view, comp) }
		switch {
		case d.Node.HostProcesses:
			path, to = hostprocess.UnitPath(d.SystemRoot, comp), "new unit"
			build = func() ([]byte, error) {
				data, _, err := initphases.BuildUnit(view, comp)
				return data, err
			}
		case d.Node.SelfHosted:
			path = selfhosting.CheckpointPath(selfhosting.CheckpointDir(d.KubernetesDir), comp)
		}
		old, err := boundedread.ReadFile(path, boundedread.MaxFile)
		if err != nil {
			return err
		}
		data, err := build()
		if err != nil {
			return err
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(old)), B: difflib.SplitLines(string(data)),
			FromFile: path, ToFile: to, Context: contextLines,
		})
		if err != nil {
			return err
		}
		fmt.Fprint(out, text)
	}
	return nil
}
