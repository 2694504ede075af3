package upgrade

import (
	"fmt"
	"sort"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// MaxKubeletSkew is how many minor releases a kubelet may lag behind the
// control plane it talks to.
const MaxKubeletSkew = 3

// VersionPolicy is what the skew check compares.
type VersionPolicy struct {
	// Cluster is the version the control plane runs now (the API
	// server's), Kubeadm this program's and Target the version asked for.
	Cluster, Kubeadm, Target *utilversion.Version
	// Kubelets maps each kubelet version found in the cluster to its nodes.
	Kubelets map[string][]string
	// AllowExperimental and AllowRC accept pre-release targets (any, or
	// release candidates only).
	AllowExperimental, AllowRC bool
}

// SkewErrors are the policy's objections: Mandatory ones stop an upgrade
// whatever the flags, Skippable ones only without --force.
type SkewErrors struct {
	Mandatory, Skippable []error
}

// Err joins the objections that stop an upgrade (the skippable ones only
// when force is false); nil when there are none.
func (s SkewErrors) Err(force bool) error {
	errs := append([]error{}, s.Mandatory...)
	if !force {
		errs = append(errs, s.Skippable...)
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = "\t- " + e.Error()
	}
	hint := ""
	if len(s.Mandatory) == 0 {
		hint = "\nThese can be overridden with --force, at your own risk."
	}
	return fmt.Errorf("the upgrade breaks the version skew policy:\n%s%s", strings.Join(msgs, "\n"), hint)
}

// Check applies the version skew policy to an upgrade from p.Cluster to
// p.Target done by kubeadm p.Kubeadm.
func (p VersionPolicy) Check() SkewErrors {
	var s SkewErrors
	t, c, k := p.Target, p.Cluster, p.Kubeadm
	must := func(format string, args ...any) { s.Mandatory = append(s.Mandatory, fmt.Errorf(format, args...)) }
	may := func(format string, args ...any) { s.Skippable = append(s.Skippable, fmt.Errorf(format, args...)) }

	// The oldest control plane this kubeadm still upgrades: one minor below its own.
	if k.Minor() > 0 {
		oldest := utilversion.MajorMinor(k.Major(), k.Minor()-1)
		if t.LessThan(oldest) {
			must("the target version %s is older than %s, the oldest this kubeadm can upgrade to", t, oldest)
		}
	}
	switch {
	case t.Major() != c.Major():
		must("the target version %s is of another major release than the cluster's %s", t, c)
	case t.Minor() > c.Minor()+1:
		must("the target version %s skips a minor release: the cluster runs %s and kubeadm upgrades one minor release at a time", t, c)
	case t.Minor()+1 < c.Minor():
		must("the target version %s is more than one minor release below the cluster's %s: kubeadm downgrades one minor release at a time", t, c)
	}
	if t.PreRelease() != "" && !p.AllowExperimental && !(p.AllowRC && strings.HasPrefix(t.PreRelease(), "rc")) {
		must("the target version %s is not a stable release; allow it with --allow-experimental-upgrades (or --allow-release-candidate-upgrades for a release candidate)", t)
	}
	if k.LessThan(t) {
		if t.Minor() > k.Minor() {
			must("the target version %s is at least one minor release newer than this kubeadm (%s): upgrade kubeadm first", t, k)
		} else {
			may("the target version %s is newer than this kubeadm (%s): upgrade kubeadm first", t, k)
		}
	}
	if k.Minor() > t.Minor() {
		may("this kubeadm (%s) is meant to upgrade to its own minor release, not to %s", k, t)
	}
	if t.LessThan(c) {
		may("the target version %s is older than the cluster's %s: downgrades are not supported", t, c)
	}
	var tooOld []string
	for v := range p.Kubelets {
		kv, err := utilversion.ParseSemantic(v)
		if err != nil {
			may("a kubelet reports a version kubeadm cannot read: %q", v)
			continue
		}
		if kv.Major() != t.Major() || kv.Minor()+MaxKubeletSkew < t.Minor() {
			tooOld = append(tooOld, v)
		}
	}
	if len(tooOld) > 0 {
		sort.Strings(tooOld)
		may("some kubelets are too old for %s (at most %d minor releases behind): %s", t, MaxKubeletSkew, strings.Join(tooOld, ", "))
	}
	return s
}

// EtcdTagVersion reads the etcd release of an etcd image tag such as
// "3.6.8-0" (the part after the dash is the image's own revision).
func EtcdTagVersion(tag string) (*utilversion.Version, error) {
	v, err := utilversion.ParseSemantic(tag)
	if err != nil {
		base, _, _ := strings.Cut(tag, "-")
		v, err = utilversion.ParseGeneric(base)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the etcd version of image tag %q: %w", tag, err)
	}
	return v, nil
}

// ImageTag is the tag of an image reference ("" when it has none).
func ImageTag(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}
