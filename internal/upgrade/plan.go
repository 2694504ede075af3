package upgrade

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/addons/coredns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubedns"
	"github.com/kubeadm-go/kubeadm/internal/addons/kubeproxy"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Component names as the plan shows them.
const (
	ComponentKubelet = "kubelet"
	ComponentKubeadm = "kubeadm"
	ComponentCoreDNS = "CoreDNS"
	ComponentKubeDNS = "kube-dns"
)

// ClusterState is what runs in the cluster now.
type ClusterState struct {
	// Version is the API server's version.
	Version string
	// Static maps each static Pod component (kube-apiserver, ...,
	// etcd) to the image tag each node runs.
	Static map[string]map[string]string
	// Kubelets maps node names to kubelet versions.
	Kubelets map[string]string
	// CoreDNS is its image tag ("" when not installed). (kube-proxy is
	// shown at the cluster's version, as upstream does.)
	CoreDNS string
	// KubeDNS is the image tag of kube-dns's first container ("" when not
	// installed).
	KubeDNS string
}

// nodesPerPage is how many nodes one request lists: a few tens of KiB
// each, far below the cap on one answer.
const nodesPerPage = 250

// ReadClusterState asks the API server what runs where.
func ReadClusterState(ctx context.Context, c kubernetes.Interface) (*ClusterState, error) {
	sv, err := c.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("asking the API server its version: %w", err)
	}
	s := &ClusterState{Version: sv.GitVersion, Static: map[string]map[string]string{}, Kubelets: map[string]string{}}
	for _, comp := range append(staticpod.ControlPlaneComponents(), staticpod.Etcd) {
		pods, err := c.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "component=" + comp})
		if err != nil {
			return nil, fmt.Errorf("listing the %s Pods: %w", comp, err)
		}
		for _, p := range pods.Items {
			if len(p.Spec.Containers) == 0 || p.Spec.NodeName == "" {
				continue
			}
			if s.Static[comp] == nil {
				s.Static[comp] = map[string]string{}
			}
			s.Static[comp][p.Spec.NodeName] = ImageTag(p.Spec.Containers[0].Image)
		}
	}
	// In pages: every answer is capped (boundedread.MaxAPIResponse), and
	// the nodes of a large cluster may not fit in one.
	opts := metav1.ListOptions{Limit: nodesPerPage}
	for {
		nodes, err := c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the nodes: %w", err)
		}
		for _, n := range nodes.Items {
			s.Kubelets[n.Name] = n.Status.NodeInfo.KubeletVersion
		}
		if opts.Continue = nodes.Continue; opts.Continue == "" {
			break
		}
	}
	for _, dns := range []struct {
		name, what string
		tag        *string
	}{{coredns.Name, "CoreDNS", &s.CoreDNS}, {kubedns.Name, "kube-dns", &s.KubeDNS}} {
		dep, err := c.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, dns.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the %s Deployment: %w", dns.what, err)
		default:
			*dns.tag = firstImageTag(dep.Spec.Template.Spec.Containers)
		}
	}
	return s, nil
}

func firstImageTag(cs []corev1.Container) string {
	if len(cs) == 0 {
		return ""
	}
	return ImageTag(cs[0].Image)
}

// KubeletVersions groups the kubelets by version (for VersionPolicy).
func (s *ClusterState) KubeletVersions() map[string][]string {
	out := map[string][]string{}
	for node, v := range s.Kubelets {
		out[v] = append(out[v], node)
	}
	return out
}

// NodesNotAt lists the control-plane nodes whose API server does not run
// the image tag of version, sorted.
func (s *ClusterState) NodesNotAt(version string) []string {
	var out []string
	for node, tag := range s.Static[staticpod.KubeAPIServer] {
		if tag != images.KubernetesTag(version) {
			out = append(out, node)
		}
	}
	sort.Strings(out)
	return out
}

// Plan is the machine-readable upgrade plan
// (output.kubeadm.k8s.io/v1alpha3 UpgradePlan).
type Plan struct {
	Kind              string                 `json:"kind"`
	APIVersion        string                 `json:"apiVersion"`
	AvailableUpgrades []AvailableUpgrade     `json:"availableUpgrades,omitempty"`
	ConfigVersions    []ComponentConfigState `json:"configVersions"`

	// kubeadmVersion is this program's version.
	kubeadmVersion string
}

// AvailableUpgrade is one target and what it changes.
type AvailableUpgrade struct {
	Description string             `json:"description"`
	Components  []ComponentUpgrade `json:"components"`

	// applyFlags are appended to the printed apply command line.
	applyFlags string
}

// ComponentUpgrade is one component's version now and after the upgrade.
type ComponentUpgrade struct {
	Name           string `json:"name"`
	CurrentVersion string `json:"currentVersion"`
	NewVersion     string `json:"newVersion"`
	NodeName       string `json:"nodeName,omitempty"`
}

// ComponentConfigState says whether a component configuration needs a
// manual upgrade.
type ComponentConfigState struct {
	Group                 string `json:"group"`
	CurrentVersion        string `json:"currentVersion"`
	PreferredVersion      string `json:"preferredVersion"`
	ManualUpgradeRequired bool   `json:"manualUpgradeRequired"`
}

// BuildPlan compares the cluster's state with what an upgrade to target
// (with cfg's image settings) would run.
func BuildPlan(s *ClusterState, cfg *kubeadm.ClusterConfiguration, target *utilversion.Version, kubeadmVersion string) *Plan {
	tv := "v" + strings.TrimPrefix(target.String(), "v")
	p := &Plan{
		Kind: "UpgradePlan", APIVersion: output.APIVersion,
		ConfigVersions: []ComponentConfigState{
			{Group: "kubeproxy.config.k8s.io", CurrentVersion: "v1alpha1", PreferredVersion: "v1alpha1"},
			{Group: "kubelet.config.k8s.io", CurrentVersion: "v1beta1", PreferredVersion: "v1beta1"},
		},
		kubeadmVersion: kubeadmVersion,
	}
	var comps []ComponentUpgrade
	perNode := func(name string, current map[string]string, next string) {
		for _, node := range slices.Sorted(maps.Keys(current)) {
			comps = append(comps, ComponentUpgrade{Name: name, CurrentVersion: current[node], NewVersion: next, NodeName: node})
		}
	}
	if anyNotAt(s.Kubelets, tv) {
		perNode(ComponentKubelet, s.Kubelets, tv)
	}
	for _, comp := range staticpod.ControlPlaneComponents() {
		perNode(comp, s.Static[comp], tv)
	}
	if !cfg.Proxy.Disabled {
		// As upstream, the cluster's version without its "v".
		comps = append(comps, ComponentUpgrade{Name: kubeproxy.Name, CurrentVersion: strings.TrimPrefix(s.Version, "v"), NewVersion: tv})
	}
	switch {
	case cfg.DNS.Disabled:
	case cfg.DNSAddon() == kubeadm.KubeDNS:
		comps = append(comps, ComponentUpgrade{Name: ComponentKubeDNS, CurrentVersion: s.KubeDNS, NewVersion: ImageTag(images.KubeDNS(cfg, images.KubeDNSKubeDNS))})
	default:
		comps = append(comps, ComponentUpgrade{Name: ComponentCoreDNS, CurrentVersion: s.CoreDNS, NewVersion: ImageTag(images.DNS(cfg))})
	}
	comps = append(comps, ComponentUpgrade{Name: ComponentKubeadm, CurrentVersion: kubeadmVersion, NewVersion: tv})
	if cfg.Etcd.External == nil {
		perNode(staticpod.Etcd, s.Static[staticpod.Etcd], ImageTag(images.EtcdImage(cfg)))
	}

	changes := false
	for _, c := range comps {
		// kube-proxy's current version is shown without its "v".
		if c.Name != ComponentKubeadm && strings.TrimPrefix(c.CurrentVersion, "v") != strings.TrimPrefix(c.NewVersion, "v") {
			changes = true
		}
	}
	if !changes {
		return p
	}
	cluster, err := utilversion.ParseSemantic(s.Version)
	u := AvailableUpgrade{Description: "stable version", Components: comps}
	switch {
	case target.PreRelease() != "" && strings.HasPrefix(target.PreRelease(), "rc"):
		u.Description = "release candidate version"
		u.applyFlags = " --allow-release-candidate-upgrades"
	case target.PreRelease() != "":
		u.Description = "experimental version"
		u.applyFlags = " --allow-experimental-upgrades"
	case err == nil && cluster.Major() == target.Major() && cluster.Minor() == target.Minor():
		u.Description = fmt.Sprintf("version in the v%d.%d series", target.Major(), target.Minor())
	}
	p.AvailableUpgrades = []AvailableUpgrade{u}
	return p
}

// Offers chooses the targets a plan offers when no version was asked for,
// as upstream's: the latest release of the cluster's own minor (series)
// when it is newer than the cluster, then the latest stable release
// (stable) when it is newer still. When neither is newer, stable alone is
// returned, and the plan built for it says there is nothing to upgrade.
func Offers(cluster, series, stable *utilversion.Version) []*utilversion.Version {
	var out []*utilversion.Version
	if series.GreaterThan(cluster) {
		out = append(out, series)
	}
	if stable.GreaterThan(cluster) && stable.GreaterThan(series) {
		out = append(out, stable)
	}
	if len(out) == 0 {
		out = append(out, stable)
	}
	return out
}

// Add appends the upgrades q offers to p's, for a plan that offers more
// than one target (the latest release of the cluster's minor, then the
// latest stable release).
func (p *Plan) Add(q *Plan) {
	p.AvailableUpgrades = append(p.AvailableUpgrades, q.AvailableUpgrades...)
}

// anyNotAt reports whether some value of versions differs from v. Upstream
// lists the kubelets only then (all of them, also those already at v).
func anyNotAt(versions map[string]string, v string) bool {
	for _, cur := range versions {
		if cur != v {
			return true
		}
	}
	return false
}

// PrintText writes the plan as upstream kubeadm's tables.
func (p *Plan) PrintText(w io.Writer) error {
	if len(p.AvailableUpgrades) == 0 {
		fmt.Fprintln(w, "The cluster already runs the target versions: there is nothing to upgrade.")
	}
	for _, u := range p.AvailableUpgrades {
		var target string
		var manual, auto []ComponentUpgrade
		for _, c := range u.Components {
			switch c.Name {
			case ComponentKubelet:
				manual = append(manual, c)
			case ComponentKubeadm:
				target = c.NewVersion
			default:
				auto = append(auto, c)
			}
		}
		// Upstream prints this table even when it has no row.
		fmt.Fprintln(w, "Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':")
		if err := table(w, manual); err != nil {
			return err
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Upgrade to the latest %s:\n\n", u.Description)
		if err := table(w, auto); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nYou can now apply the upgrade by executing the following command:\n\n\tkubeadm upgrade apply %s%s\n\n", target, u.applyFlags)
		if target != p.kubeadmVersion {
			fmt.Fprintf(w, "Note: Before you can perform this upgrade, you have to update kubeadm to %s.\n\n", target)
		}
		fmt.Fprintln(w, rule)
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, `
The table below shows the current state of component configs as understood by this version of kubeadm.
Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or
resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually
upgrade to is denoted in the "PREFERRED VERSION" column.

`)
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "API GROUP\tCURRENT VERSION\tPREFERRED VERSION\tMANUAL UPGRADE REQUIRED")
	for _, c := range p.ConfigVersions {
		manual := "no"
		if c.ManualUpgradeRequired {
			manual = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Group, c.CurrentVersion, c.PreferredVersion, manual)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, rule)
	fmt.Fprintln(w)
	return nil
}

const rule = "_____________________________________________________________________"

func table(w io.Writer, rows []ComponentUpgrade) error {
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tNODE\tCURRENT\tTARGET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.NodeName, r.CurrentVersion, r.NewVersion)
	}
	return tw.Flush()
}
