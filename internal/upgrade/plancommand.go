package upgrade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
	"github.com/kubeadm-go/kubeadm/internal/version"
)

// PlanRequest is what "kubeadm upgrade plan" was asked, its flags merged
// with its UpgradeConfiguration.
type PlanRequest struct {
	Env     config.Environment
	Upgrade *kubeadm.UpgradeConfiguration
	// Asked is the version asked for; "" looks up the latest releases.
	Asked          string
	KubeconfigPath string
	ManifestDir    string
	// CheckpointDir keeps a self-hosted control plane's checkpoints.
	CheckpointDir string
	Ignored       sets.Set[string]
	// AllowExperimental and AllowRC accept pre-release targets.
	AllowExperimental, AllowRC bool
	// EtcdUpgrade false leaves etcd out of the plan.
	EtcdUpgrade bool
	// PrintConfig prints the configuration of the target version.
	PrintConfig bool
	Host        preflight.Host
	// Printer prints the plan as a document; nil prints the text table.
	Printer *output.Printer
	// Out receives the plan, Progress the lines that lead to it and Err
	// the warnings.
	Out, Progress, Err io.Writer
}

// RunPlan checks this machine and the cluster as "upgrade apply" would,
// then prints which version every component runs and what each offered
// target would run instead.
func RunPlan(ctx context.Context, r PlanRequest) error {
	progress := r.Progress
	// As upstream's, the plan is for root only: it reads admin.conf and
	// the node's manifests.
	fmt.Fprintln(progress, "[preflight] Running pre-flight checks")
	if err := preflight.Run(ctx, []preflight.Check{preflight.IsPrivilegedUser(r.Host)}, r.Ignored, progress, progress); err != nil {
		return exitcode.PreflightError(err)
	}
	c, _, err := apiclient.FromKubeconfig(r.KubeconfigPath, kubeadm.KubernetesAPICall(r.Upgrade.Timeouts))
	if err != nil {
		return err
	}
	cluster, err := FetchClusterConfig(ctx, c, r.Upgrade.Timeouts, progress, true)
	if err != nil {
		return err
	}
	// Without a version to check, the plan looks up the latest releases
	// online, as upstream's: "stable" is the target version.
	target, err := r.Env.ResolveVersion(ctx, cmp.Or(r.Asked, "stable"))
	if err != nil {
		return err
	}
	clusterAt := func(version string) (*kubeadm.ClusterConfiguration, error) {
		cc := *cluster.Cluster
		cc.KubernetesVersion = version
		return r.Env.ClusterConfiguration(ctx, &config.Documents{Source: "the cluster", Cluster: &cc})
	}
	cfg, err := clusterAt(target)
	if err != nil {
		return err
	}
	fmt.Fprintln(progress, "[upgrade] Running cluster health checks")
	h := Health{Client: c, Cluster: cfg, ManifestDir: r.ManifestDir, CheckpointDir: r.CheckpointDir, Out: progress}
	if err := preflight.Run(ctx, h.ClusterHealthChecks(), r.Ignored, progress, progress); err != nil {
		return exitcode.PreflightError(err)
	}
	fmt.Fprintln(progress, "[upgrade] Reading what runs in the cluster")
	s, err := ReadClusterState(ctx, c)
	if err != nil {
		return err
	}
	p, err := NewVersionPolicy(s, target, r.AllowExperimental, r.AllowRC)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "[upgrade/versions] Cluster version: %s\n", strings.TrimPrefix(s.Version, "v"))
	fmt.Fprintf(progress, "[upgrade/versions] kubeadm version: %s\n", version.Get().GitVersion)
	fmt.Fprintf(progress, "[upgrade/versions] Target version: %s\n", target)
	offers, err := planOffers(ctx, r.Env, progress, r.Asked, p)
	if err != nil {
		return err
	}
	skew := p.Check()
	if err := skew.Err(false); err != nil {
		fmt.Fprintf(r.Err, "[upgrade/versions] WARNING: %v\n", err)
	}
	if r.PrintConfig {
		if err := PrintConfig(progress, cfg); err != nil {
			return err
		}
	}
	var plan *Plan
	for _, v := range offers {
		at, err := clusterAt("v" + strings.TrimPrefix(v.String(), "v"))
		if err != nil {
			return err
		}
		if !r.EtcdUpgrade {
			at.Etcd.External = &kubeadm.ExternalEtcd{} // leaves etcd out of the plan
		}
		next := BuildPlan(s, at, v, version.Get().GitVersion)
		if plan == nil {
			plan = next
		} else {
			plan.Add(next)
		}
	}
	if r.Printer == nil {
		fmt.Fprintln(r.Out)
		return plan.PrintText(r.Out)
	}
	return r.Printer.Print(r.Out, plan)
}

// planOffers returns the versions the plan offers: the one asked for, or,
// when none was, the latest release of the cluster's minor (looked up and
// reported as upstream's plan does) and the target, the latest stable one,
// each when newer than the cluster (see Offers).
func planOffers(ctx context.Context, env config.Environment, progress io.Writer, asked string, p *VersionPolicy) ([]*utilversion.Version, error) {
	if asked != "" {
		return []*utilversion.Version{p.Target}, nil
	}
	label := fmt.Sprintf("stable-%d.%d", p.Cluster.Major(), p.Cluster.Minor())
	latest, err := env.ResolveVersion(ctx, label)
	if err != nil {
		return nil, err
	}
	series, err := utilversion.ParseSemantic(latest)
	if err != nil {
		return nil, fmt.Errorf("the version %q of %s: %w", latest, label, err)
	}
	fmt.Fprintf(progress, "[upgrade/versions] Latest version in the v%d.%d series: %s\n", p.Cluster.Major(), p.Cluster.Minor(), latest)
	return Offers(p.Cluster, series, p.Target), nil
}

// NewVersionPolicy gathers what the version skew check compares: the
// cluster state s, this kubeadm's version and the target.
func NewVersionPolicy(s *ClusterState, target string, allowExperimental, allowRC bool) (*VersionPolicy, error) {
	p := &VersionPolicy{Kubelets: s.KubeletVersions(), AllowExperimental: allowExperimental, AllowRC: allowRC}
	var errs []error
	var e error
	p.Cluster, e = utilversion.ParseSemantic(s.Version)
	errs = append(errs, e)
	p.Kubeadm, e = utilversion.ParseSemantic(version.Get().GitVersion)
	errs = append(errs, e)
	p.Target, e = utilversion.ParseSemantic(target)
	errs = append(errs, e)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("reading the versions to compare: %w", err)
	}
	return p, nil
}

// FetchClusterConfig reads the configuration stored in the cluster, saying
// so on out. The component configurations kubeadm generated from defaults
// are left out, so that this kubeadm's defaults apply; kube-proxy's is
// read only withProxy (a worker's credentials may not read it). The lines
// said carry upstream's "[upgrade]" prefix.
func FetchClusterConfig(ctx context.Context, c kubernetes.Interface, timeouts *kubeadm.Timeouts, out io.Writer, withProxy bool) (*config.Documents, error) {
	fmt.Fprintf(out, "[upgrade] Reading the cluster's configuration from the %q ConfigMap in the %q namespace\n", uploadconfig.KubeadmConfigMap, "kube-system")
	fmt.Fprintln(out, "[upgrade] If it is wrong, store the right one with 'kubeadm init phase upload-config kubeadm --config <your-config-file>'")
	return uploadconfig.FetchDocuments(ctx, c, kubeadm.KubernetesAPICall(timeouts), uploadconfig.FetchOptions{KubeProxy: withProxy, DropGenerated: true})
}

// PrintConfig prints the cluster configuration an upgrade uses.
func PrintConfig(out io.Writer, cfg *kubeadm.ClusterConfiguration) error {
	b, err := config.MarshalDocuments(config.ClusterToV1beta4(cfg))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[upgrade/config] The configuration of the upgrade:\n%s", b)
	return nil
}
