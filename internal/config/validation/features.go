package validation

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FeatureStage is the maturity of a kubeadm feature gate.
type FeatureStage string

// Feature gate stages.
const (
	FeatureAlpha      FeatureStage = "ALPHA"
	FeatureBeta       FeatureStage = "BETA"
	FeatureGA         FeatureStage = "GA"
	FeatureDeprecated FeatureStage = "DEPRECATED"
)

// FeatureGate describes one gate of ClusterConfiguration.featureGates.
type FeatureGate struct {
	Name    string
	Default bool
	// LockToDefault means the gate may be named but only with its default.
	LockToDefault bool
	Stage         FeatureStage
}

// KnownFeatureGates are the gates kubeadm v1.37 recognizes, by name, and
// this kubeadm's own ones (upstream refuses their names): CISHardening,
// HostProcessControlPlane (docs/decisions/013-host-process-control-plane.md),
// NodeLocalAPILoadBalancer, SelfHosting (the name of the gate kubeadm
// v1.8–v1.11 had; docs/decisions/014-self-hosted-control-plane.md), and CoreDNS, the gate kubeadm v1.9–v1.17 had,
// kept as the way to choose kube-dns (false) over CoreDNS
// (docs/decisions/012-kube-dns-addon.md).
// Any other name, including a different spelling or case, is refused. None
// is locked in this release. Gates that were removed earlier (for example
// ControlPlaneKubeletLocalMode, WaitForAllControlPlaneComponents,
// EtcdLearnerMode, UpgradeAddonsBeforeControlPlane, and since v1.37
// NodeLocalCRISocket and PublicKeysECDSA) are unknown names now.
//
// This table belongs to a future internal/features package once something
// other than validation needs it (flag help, feature checks); keep one copy.
var KnownFeatureGates = []FeatureGate{
	{Name: "CISHardening", Default: false, Stage: FeatureAlpha},
	{Name: "CoreDNS", Default: true, Stage: FeatureGA},
	{Name: "HostProcessControlPlane", Default: false, Stage: FeatureAlpha},
	{Name: "NodeLocalAPILoadBalancer", Default: false, Stage: FeatureAlpha},
	{Name: "RootlessControlPlane", Default: false, Stage: FeatureAlpha},
	{Name: "SelfHosting", Default: false, Stage: FeatureAlpha},
}

// LookupFeatureGate returns the gate called name (case-sensitive).
func LookupFeatureGate(name string) (FeatureGate, bool) {
	for _, g := range KnownFeatureGates {
		if g.Name == name {
			return g, true
		}
	}
	return FeatureGate{}, false
}

// validateFeatureGates refuses unknown gate names and locked gates set
// against their default. Names are reported in sorted order so the output
// is stable.
func validateFeatureGates(gates map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g, ok := LookupFeatureGate(name)
		if !ok {
			errs = append(errs, field.Invalid(p, gates, fmt.Sprintf("%q is not a known feature gate", name)))
			continue
		}
		if g.LockToDefault && gates[name] != g.Default {
			errs = append(errs, field.Invalid(p, gates, fmt.Sprintf("feature gate %q is locked to %t", name, g.Default)))
		}
	}
	// The benchmark CISHardening follows wants every key and kubeconfig
	// owned by root with mode 0600, which the users of a rootless control
	// plane could not read.
	if gates["CISHardening"] && gates["RootlessControlPlane"] {
		errs = append(errs, field.Invalid(p, gates, "the feature gates CISHardening and RootlessControlPlane cannot both be on: the hardening profile keeps every key and kubeconfig file readable by root only"))
	}
	// Both put users and security contexts into the Pods, which the units
	// of a control plane of host processes do not translate yet.
	for _, other := range []string{"CISHardening", "RootlessControlPlane"} {
		if gates["HostProcessControlPlane"] && gates[other] {
			errs = append(errs, field.Invalid(p, gates, fmt.Sprintf("the feature gates HostProcessControlPlane and %s cannot both be on: the units of a control plane of host processes do not carry the users and security contexts %s gives the components", other, other)))
		}
	}
	// Host processes have no static Pods to turn into DaemonSets.
	if gates["HostProcessControlPlane"] && gates["SelfHosting"] {
		errs = append(errs, field.Invalid(p, gates, "the feature gates HostProcessControlPlane and SelfHosting cannot both be on: one runs the control plane as systemd units, the other as DaemonSet Pods"))
	}
	return errs
}
