package upgrade_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/images"
	"github.com/kubeadm-go/kubeadm/internal/output"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// planCluster is a one-node cluster on v1.36.2 with CoreDNS and etcd at
// the versions of v1.36.3.
func planCluster() *upgrade.ClusterState {
	return &upgrade.ClusterState{
		Version: "v1.36.2",
		Static: map[string]map[string]string{
			"kube-apiserver":          {"node1": "v1.36.2"},
			"kube-controller-manager": {"node1": "v1.36.2"},
			"kube-scheduler":          {"node1": "v1.36.2"},
			"etcd":                    {"node1": "3.7.0-0"},
		},
		Kubelets: map[string]string{"node1": "v1.36.2"},
		CoreDNS:  "v1.14.6",
	}
}

func planConfig(version string) *kubeadm.ClusterConfiguration {
	return &kubeadm.ClusterConfiguration{
		KubernetesVersion: version,
		ImageRepository:   images.DefaultRepository,
		Etcd:              kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}},
	}
}

const configTableText = `
The table below shows the current state of component configs as understood by this version of kubeadm.
Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or
resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually
upgrade to is denoted in the "PREFERRED VERSION" column.

API GROUP                 CURRENT VERSION   PREFERRED VERSION   MANUAL UPGRADE REQUIRED
kubeproxy.config.k8s.io   v1alpha1          v1alpha1            no
kubelet.config.k8s.io     v1beta1           v1beta1             no
_____________________________________________________________________

`

const patchPlanText = `Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     node1     v1.36.2   v1.36.3

Upgrade to the latest version in the v1.36 series:

COMPONENT                 NODE      CURRENT   TARGET
kube-apiserver            node1     v1.36.2   v1.36.3
kube-controller-manager   node1     v1.36.2   v1.36.3
kube-scheduler            node1     v1.36.2   v1.36.3
kube-proxy                          1.36.2    v1.36.3
CoreDNS                             v1.14.6   v1.14.6
etcd                      node1     3.7.0-0   3.7.0-0

You can now apply the upgrade by executing the following command:

	kubeadm upgrade apply v1.36.3

_____________________________________________________________________

` + configTableText

const patchPlanJSON = `{
    "kind": "UpgradePlan",
    "apiVersion": "output.kubeadm.k8s.io/v1alpha3",
    "availableUpgrades": [
        {
            "description": "version in the v1.36 series",
            "components": [
                {
                    "name": "kubelet",
                    "currentVersion": "v1.36.2",
                    "newVersion": "v1.36.3",
                    "nodeName": "node1"
                },
                {
                    "name": "kube-apiserver",
                    "currentVersion": "v1.36.2",
                    "newVersion": "v1.36.3",
                    "nodeName": "node1"
                },
                {
                    "name": "kube-controller-manager",
                    "currentVersion": "v1.36.2",
                    "newVersion": "v1.36.3",
                    "nodeName": "node1"
                },
                {
                    "name": "kube-scheduler",
                    "currentVersion": "v1.36.2",
                    "newVersion": "v1.36.3",
                    "nodeName": "node1"
                },
                {
                    "name": "kube-proxy",
                    "currentVersion": "1.36.2",
                    "newVersion": "v1.36.3"
                },
                {
                    "name": "CoreDNS",
                    "currentVersion": "v1.14.6",
                    "newVersion": "v1.14.6"
                },
                {
                    "name": "kubeadm",
                    "currentVersion": "v1.36.3",
                    "newVersion": "v1.36.3"
                },
                {
                    "name": "etcd",
                    "currentVersion": "3.7.0-0",
                    "newVersion": "3.7.0-0",
                    "nodeName": "node1"
                }
            ]
        }
    ],
    "configVersions": [
        {
            "group": "kubeproxy.config.k8s.io",
            "currentVersion": "v1alpha1",
            "preferredVersion": "v1alpha1",
            "manualUpgradeRequired": false
        },
        {
            "group": "kubelet.config.k8s.io",
            "currentVersion": "v1beta1",
            "preferredVersion": "v1beta1",
            "manualUpgradeRequired": false
        }
    ]
}
`

const patchPlanYAML = `apiVersion: output.kubeadm.k8s.io/v1alpha3
availableUpgrades:
- components:
  - currentVersion: v1.36.2
    name: kubelet
    newVersion: v1.36.3
    nodeName: node1
  - currentVersion: v1.36.2
    name: kube-apiserver
    newVersion: v1.36.3
    nodeName: node1
  - currentVersion: v1.36.2
    name: kube-controller-manager
    newVersion: v1.36.3
    nodeName: node1
  - currentVersion: v1.36.2
    name: kube-scheduler
    newVersion: v1.36.3
    nodeName: node1
  - currentVersion: 1.36.2
    name: kube-proxy
    newVersion: v1.36.3
  - currentVersion: v1.14.6
    name: CoreDNS
    newVersion: v1.14.6
  - currentVersion: v1.36.3
    name: kubeadm
    newVersion: v1.36.3
  - currentVersion: 3.7.0-0
    name: etcd
    newVersion: 3.7.0-0
    nodeName: node1
  description: version in the v1.36 series
configVersions:
- currentVersion: v1alpha1
  group: kubeproxy.config.k8s.io
  manualUpgradeRequired: false
  preferredVersion: v1alpha1
- currentVersion: v1beta1
  group: kubelet.config.k8s.io
  manualUpgradeRequired: false
  preferredVersion: v1beta1
kind: UpgradePlan
`

// diffLines points at the first line where got and want part.
func diffLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("%s differs at line %d:\n got  %q\n want %q\nwhole output:\n%s", what, i+1, gl, wl, got)
			return
		}
	}
	t.Errorf("%s differs (line ends):\n got  %q\n want %q", what, got, want)
}

func TestPlanPatchUpgradeGolden(t *testing.T) {
	plan := upgrade.BuildPlan(planCluster(), planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.3")
	var text bytes.Buffer
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "text", text.String(), patchPlanText)
	for _, f := range []struct{ format, want string }{{"json", patchPlanJSON}, {"yaml", patchPlanYAML}} {
		diffLines(t, f.format, printPlan(t, plan, f.format), f.want)
	}
}

// printPlan prints plan as the -o format does.
func printPlan(t *testing.T, plan *upgrade.Plan, format string) string {
	t.Helper()
	p, err := output.New(format, true)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.Print(&out, plan); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return out.String()
}

func TestPlanUpToDate(t *testing.T) {
	s := planCluster()
	for _, comp := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		s.Static[comp]["node1"] = "v1.36.3"
	}
	s.Kubelets["node1"], s.Version = "v1.36.3", "v1.36.3"
	// kubeadm is older than the cluster: that alone is nothing to upgrade.
	plan := upgrade.BuildPlan(s, planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.2")
	if len(plan.AvailableUpgrades) != 0 {
		t.Fatalf("AvailableUpgrades = %+v, want none", plan.AvailableUpgrades)
	}
	var text bytes.Buffer
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	diffLines(t, "text", text.String(), "The cluster already runs the target versions: there is nothing to upgrade.\n"+configTableText)

	doc := bytes.NewBufferString(printPlan(t, plan, "json"))
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc.Bytes(), &fields); err != nil {
		t.Fatalf("decoding %s: %v", doc.String(), err)
	}
	if _, ok := fields["availableUpgrades"]; ok {
		t.Errorf("the JSON document has availableUpgrades:\n%s", doc.String())
	}
	if _, ok := fields["configVersions"]; !ok {
		t.Errorf("the JSON document lacks configVersions:\n%s", doc.String())
	}
}

func TestPlanKubeadmNote(t *testing.T) {
	plan := upgrade.BuildPlan(planCluster(), planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.2")
	var text bytes.Buffer
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	want := "\tkubeadm upgrade apply v1.36.3\n\n" +
		"Note: Before you can perform this upgrade, you have to update kubeadm to v1.36.3.\n\n" +
		"_____"
	if !strings.Contains(text.String(), want) {
		t.Errorf("the text lacks %q:\n%s", want, text.String())
	}

	// The note is not printed when kubeadm runs the target version.
	plan = upgrade.BuildPlan(planCluster(), planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.3")
	text.Reset()
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "Note:") {
		t.Errorf("the text has a note though kubeadm runs the target:\n%s", text.String())
	}
}

// TestPlanDescriptions checks how the upgrade is described and which flag
// the printed apply command carries.
func TestPlanDescriptions(t *testing.T) {
	cases := []struct {
		cluster, target, desc, command string
	}{
		{"v1.36.2", "v1.36.3", "version in the v1.36 series", "kubeadm upgrade apply v1.36.3\n"},
		{"v1.35.4", "v1.36.3", "stable version", "kubeadm upgrade apply v1.36.3\n"},
		{"v1.36.3", "v1.37.0-rc.1", "release candidate version", "kubeadm upgrade apply v1.37.0-rc.1 --allow-release-candidate-upgrades\n"},
		{"v1.36.3", "v1.37.0-alpha.2", "experimental version", "kubeadm upgrade apply v1.37.0-alpha.2 --allow-experimental-upgrades\n"},
	}
	for _, tc := range cases {
		s := planCluster()
		s.Version = tc.cluster
		plan := upgrade.BuildPlan(s, planConfig(tc.target), mustVersion(t, tc.target), tc.target)
		if len(plan.AvailableUpgrades) != 1 || plan.AvailableUpgrades[0].Description != tc.desc {
			t.Errorf("%s to %s: AvailableUpgrades = %+v, want one described %q", tc.cluster, tc.target, plan.AvailableUpgrades, tc.desc)
			continue
		}
		var text bytes.Buffer
		if err := plan.PrintText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "Upgrade to the latest "+tc.desc+":\n") || !strings.Contains(text.String(), "\t"+tc.command) {
			t.Errorf("%s to %s: the text lacks the description or %q:\n%s", tc.cluster, tc.target, tc.command, text.String())
		}
	}
}

// TestPlanKubeletsAtTarget: as upstream, kubelets already at the target are
// not listed, but the table of manual upgrades keeps its header.
func TestPlanKubeletsAtTarget(t *testing.T) {
	s := planCluster()
	s.Kubelets["node1"] = "v1.36.3"
	plan := upgrade.BuildPlan(s, planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.3")
	if len(plan.AvailableUpgrades) != 1 {
		t.Fatalf("AvailableUpgrades = %+v, want one", plan.AvailableUpgrades)
	}
	for _, c := range plan.AvailableUpgrades[0].Components {
		if c.Name == upgrade.ComponentKubelet {
			t.Errorf("the plan lists the kubelet already at the target: %+v", c)
		}
	}
	var text bytes.Buffer
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	want := "Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':\n" +
		"COMPONENT   NODE      CURRENT   TARGET\n\nUpgrade to the latest"
	if !strings.HasPrefix(text.String(), want) {
		t.Errorf("the text does not start with %q:\n%s", want, text.String())
	}

	// A second kubelet behind: both are listed, as upstream does.
	s.Kubelets["node2"] = "v1.36.2"
	plan = upgrade.BuildPlan(s, planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.3")
	var nodes []string
	for _, c := range plan.AvailableUpgrades[0].Components {
		if c.Name == upgrade.ComponentKubelet {
			nodes = append(nodes, c.NodeName+"="+c.CurrentVersion)
		}
	}
	if got := strings.Join(nodes, ","); got != "node1=v1.36.3,node2=v1.36.2" {
		t.Errorf("kubelets listed: %s, want node1=v1.36.3,node2=v1.36.2", got)
	}
}

// TestPlanDisabledAddonsExternalEtcd leaves out what the cluster does not
// run.
func TestPlanDisabledAddonsExternalEtcd(t *testing.T) {
	cfg := planConfig("v1.36.3")
	cfg.Proxy.Disabled, cfg.DNS.Disabled = true, true
	cfg.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://etcd.example:2379"}}}
	plan := upgrade.BuildPlan(planCluster(), cfg, mustVersion(t, "v1.36.3"), "v1.36.3")
	if len(plan.AvailableUpgrades) != 1 {
		t.Fatalf("AvailableUpgrades = %+v, want one", plan.AvailableUpgrades)
	}
	for _, c := range plan.AvailableUpgrades[0].Components {
		switch c.Name {
		case "kube-proxy", upgrade.ComponentCoreDNS, "etcd":
			t.Errorf("the plan lists %s", c.Name)
		}
	}
}

// TestPlanKubeDNS: with the CoreDNS feature gate off the plan lists
// kube-dns, at the tag of its first container, and not CoreDNS.
func TestPlanKubeDNS(t *testing.T) {
	cfg := planConfig("v1.36.3")
	cfg.FeatureGates = map[string]bool{"CoreDNS": false}
	s := planCluster()
	s.CoreDNS, s.KubeDNS = "", "1.26.6"
	plan := upgrade.BuildPlan(s, cfg, mustVersion(t, "v1.36.3"), "v1.36.3")
	if len(plan.AvailableUpgrades) != 1 {
		t.Fatalf("AvailableUpgrades = %+v, want one", plan.AvailableUpgrades)
	}
	var found bool
	for _, c := range plan.AvailableUpgrades[0].Components {
		switch c.Name {
		case upgrade.ComponentCoreDNS:
			t.Errorf("the plan lists CoreDNS")
		case upgrade.ComponentKubeDNS:
			found = true
			if c.CurrentVersion != "1.26.6" || c.NewVersion != images.KubeDNSVersion {
				t.Errorf("kube-dns %s -> %s, want 1.26.6 -> %s", c.CurrentVersion, c.NewVersion, images.KubeDNSVersion)
			}
		}
	}
	if !found {
		t.Errorf("the plan does not list kube-dns: %+v", plan.AvailableUpgrades[0].Components)
	}
}

func TestClusterStateHelpers(t *testing.T) {
	s := planCluster()
	s.Static["kube-apiserver"]["node0"] = "v1.36.3"
	s.Static["kube-apiserver"]["node2"] = "v1.36.1"
	if got := strings.Join(s.NodesNotAt("v1.36.3"), ","); got != "node1,node2" {
		t.Errorf("NodesNotAt(v1.36.3) = %s, want node1,node2", got)
	}
	s.Kubelets["node2"] = "v1.36.2"
	s.Kubelets["node3"] = "v1.35.0"
	kv := s.KubeletVersions()
	if len(kv) != 2 || len(kv["v1.36.2"]) != 2 || len(kv["v1.35.0"]) != 1 || kv["v1.35.0"][0] != "node3" {
		t.Errorf("KubeletVersions() = %v", kv)
	}
}

// TestOffers: without a version asked for, the plan offers the latest
// release of the cluster's minor, then a newer stable release.
func TestOffers(t *testing.T) {
	cases := []struct {
		cluster, series, stable string
		want                    []string
	}{
		{"v1.35.2", "v1.35.6", "v1.36.3", []string{"1.35.6", "1.36.3"}},
		{"v1.35.6", "v1.35.6", "v1.36.3", []string{"1.36.3"}},
		{"v1.36.1", "v1.36.3", "v1.36.3", []string{"1.36.3"}},
		{"v1.36.3", "v1.36.3", "v1.36.3", []string{"1.36.3"}},
		// Offline both lookups fall back to this kubeadm's version.
		{"v1.35.2", "v1.36.3", "v1.36.3", []string{"1.36.3"}},
		// A cluster newer than any offer: the stable release alone, which
		// the plan then compares (and the skew check warns of).
		{"v1.37.0", "v1.36.3", "v1.36.3", []string{"1.36.3"}},
	}
	for _, tc := range cases {
		var got []string
		for _, v := range upgrade.Offers(mustVersion(t, tc.cluster), mustVersion(t, tc.series), mustVersion(t, tc.stable)) {
			got = append(got, v.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Offers(%s, %s, %s) = %v, want %v", tc.cluster, tc.series, tc.stable, got, tc.want)
		}
	}
}

// TestPlanTwoOffers: a plan offering a patch release and a new minor prints
// one section for each, each with its apply command and kubeadm note.
func TestPlanTwoOffers(t *testing.T) {
	s := planCluster()
	s.Version = "v1.35.2"
	plan := upgrade.BuildPlan(s, planConfig("v1.35.6"), mustVersion(t, "v1.35.6"), "v1.36.3")
	plan.Add(upgrade.BuildPlan(s, planConfig("v1.36.3"), mustVersion(t, "v1.36.3"), "v1.36.3"))
	if len(plan.AvailableUpgrades) != 2 {
		t.Fatalf("AvailableUpgrades = %+v, want two", plan.AvailableUpgrades)
	}
	var text bytes.Buffer
	if err := plan.PrintText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	series := strings.Index(out, "Upgrade to the latest version in the v1.35 series:")
	stable := strings.Index(out, "Upgrade to the latest stable version:")
	if series < 0 || stable < series {
		t.Fatalf("want the v1.35 series section, then the stable one:\n%s", out)
	}
	for _, want := range []string{
		"\tkubeadm upgrade apply v1.35.6\n\nNote: Before you can perform this upgrade, you have to update kubeadm to v1.35.6.",
		"\tkubeadm upgrade apply v1.36.3\n\n_____",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
}
