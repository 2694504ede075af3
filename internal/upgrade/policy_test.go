package upgrade_test

import (
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

func mustVersion(t *testing.T, s string) *utilversion.Version {
	t.Helper()
	v, err := utilversion.ParseSemantic(s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return v
}

// joinErrs is the messages of errs, one a line, for matching.
func joinErrs(errs []error) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func TestVersionPolicyCheck(t *testing.T) {
	cases := []struct {
		name                     string
		cluster, kubeadm, target string
		kubelets                 map[string][]string
		allowRC, allowExp        bool
		// mandatory and skippable list a substring of each expected
		// objection; nil means none.
		mandatory, skippable []string
	}{
		{
			name:    "patch upgrade",
			cluster: "v1.36.2", kubeadm: "v1.36.3", target: "v1.36.3",
			kubelets: map[string][]string{"v1.36.2": {"node1"}, "v1.35.4": {"node2"}},
		},
		{
			name:    "minor upgrade",
			cluster: "v1.35.4", kubeadm: "v1.36.3", target: "v1.36.3",
		},
		{
			name:    "skipping a minor release",
			cluster: "v1.34.9", kubeadm: "v1.36.3", target: "v1.36.3",
			mandatory: []string{"skips a minor release"},
		},
		{
			name:    "target of a newer minor release than kubeadm",
			cluster: "v1.36.2", kubeadm: "v1.36.3", target: "v1.37.0",
			mandatory: []string{"at least one minor release newer than this kubeadm"},
		},
		{
			name:    "target of a newer patch release than kubeadm",
			cluster: "v1.36.2", kubeadm: "v1.36.3", target: "v1.36.4",
			skippable: []string{"newer than this kubeadm"},
		},
		{
			name:    "kubeadm of a newer minor release than the target",
			cluster: "v1.35.2", kubeadm: "v1.36.3", target: "v1.35.4",
			skippable: []string{"meant to upgrade to its own minor release"},
		},
		{
			name:    "downgrade by a patch release",
			cluster: "v1.36.3", kubeadm: "v1.36.3", target: "v1.36.2",
			skippable: []string{"downgrades are not supported"},
		},
		{
			name:    "target older than kubeadm supports",
			cluster: "v1.35.0", kubeadm: "v1.36.3", target: "v1.34.5",
			mandatory: []string{"the oldest this kubeadm can upgrade to"},
			skippable: []string{"meant to upgrade to its own minor release", "downgrades are not supported"},
		},
		{
			name:    "another major release",
			cluster: "v1.36.3", kubeadm: "v2.0.0", target: "v2.0.0",
			mandatory: []string{"another major release"},
		},
		{
			name:    "release candidate refused",
			cluster: "v1.36.3", kubeadm: "v1.37.0-rc.1", target: "v1.37.0-rc.1",
			mandatory: []string{"not a stable release"},
		},
		{
			name:    "release candidate allowed",
			cluster: "v1.36.3", kubeadm: "v1.37.0-rc.1", target: "v1.37.0-rc.1",
			allowRC: true,
		},
		{
			name:    "alpha not allowed by the release candidate flag",
			cluster: "v1.36.3", kubeadm: "v1.37.0-alpha.2", target: "v1.37.0-alpha.2",
			allowRC:   true,
			mandatory: []string{"not a stable release"},
		},
		{
			name:    "alpha allowed as experimental",
			cluster: "v1.36.3", kubeadm: "v1.37.0-alpha.2", target: "v1.37.0-alpha.2",
			allowExp: true,
		},
		{
			name:    "kubelets more than three minor releases behind",
			cluster: "v1.36.2", kubeadm: "v1.36.3", target: "v1.36.3",
			kubelets: map[string][]string{
				"v1.32.5": {"old1"}, "v1.31.0": {"old2"}, "v1.33.0": {"edge"}, "v1.36.2": {"node1"},
			},
			skippable: []string{"too old for 1.36.3 (at most 3 minor releases behind): v1.31.0, v1.32.5"},
		},
		{
			name:    "unreadable kubelet version",
			cluster: "v1.36.2", kubeadm: "v1.36.3", target: "v1.36.3",
			kubelets:  map[string][]string{"banana": {"node1"}},
			skippable: []string{`cannot read: "banana"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := upgrade.VersionPolicy{
				Cluster: mustVersion(t, tc.cluster), Kubeadm: mustVersion(t, tc.kubeadm), Target: mustVersion(t, tc.target),
				Kubelets: tc.kubelets, AllowRC: tc.allowRC, AllowExperimental: tc.allowExp,
			}
			s := p.Check()
			check := func(kind string, got []error, want []string) {
				t.Helper()
				if len(got) != len(want) {
					t.Errorf("%s objections: got %d, want %d:\n%s", kind, len(got), len(want), joinErrs(got))
					return
				}
				for i, w := range want {
					if !strings.Contains(got[i].Error(), w) {
						t.Errorf("%s objection %d = %q, want it to mention %q", kind, i, got[i], w)
					}
				}
			}
			check("mandatory", s.Mandatory, tc.mandatory)
			check("skippable", s.Skippable, tc.skippable)
		})
	}
}

// TestVersionPolicyCheckKubeletSkewEdge pins the edge of the kubelet skew:
// exactly MaxKubeletSkew minor releases behind is still fine.
func TestVersionPolicyCheckKubeletSkewEdge(t *testing.T) {
	p := upgrade.VersionPolicy{
		Cluster: mustVersion(t, "v1.36.2"), Kubeadm: mustVersion(t, "v1.36.3"), Target: mustVersion(t, "v1.36.3"),
		Kubelets: map[string][]string{"v1.33.0": {"edge"}},
	}
	if s := p.Check(); len(s.Mandatory)+len(s.Skippable) != 0 {
		t.Errorf("a kubelet %d minor releases behind: got objections %v %v", upgrade.MaxKubeletSkew, s.Mandatory, s.Skippable)
	}
}

func TestSkewErrorsErr(t *testing.T) {
	mandatory := errorString("the target skips a minor release")
	skippable := errorString("the target is newer than kubeadm")
	cases := []struct {
		name  string
		s     upgrade.SkewErrors
		force bool
		// want are substrings of the error, absent ones that must not be
		// in it; wantNil expects no error.
		want, absent []string
		wantNil      bool
	}{
		{name: "nothing", wantNil: true},
		{name: "nothing, forced", force: true, wantNil: true},
		{
			name: "skippable only",
			s:    upgrade.SkewErrors{Skippable: []error{skippable}},
			want: []string{"version skew policy", "\t- the target is newer than kubeadm", "--force"},
		},
		{
			name: "skippable only, forced", force: true,
			s:       upgrade.SkewErrors{Skippable: []error{skippable}},
			wantNil: true,
		},
		{
			name:   "both",
			s:      upgrade.SkewErrors{Mandatory: []error{mandatory}, Skippable: []error{skippable}},
			want:   []string{"\t- the target skips a minor release\n\t- the target is newer than kubeadm"},
			absent: []string{"--force"},
		},
		{
			name: "both, forced", force: true,
			s:      upgrade.SkewErrors{Mandatory: []error{mandatory}, Skippable: []error{skippable}},
			want:   []string{"\t- the target skips a minor release"},
			absent: []string{"newer than kubeadm", "--force"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Err(tc.force)
			if tc.wantNil {
				if err != nil {
					t.Fatalf("Err(%v) = %v, want nil", tc.force, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Err(%v) = nil, want an error", tc.force)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Err(%v) = %q, want it to contain %q", tc.force, err, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("Err(%v) = %q, want no %q in it", tc.force, err, a)
				}
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestEtcdTagVersion(t *testing.T) {
	cases := []struct {
		older, newer string
	}{
		{"3.6.7-0", "3.6.8-0"},
		{"3.5.21-0", "3.6.8-0"},
		{"3.6.8-0", "3.6.8-1"},
		// Not semantic (underscore): read from the part before the dash.
		{"3.6.7-0_custom", "3.6.8-0"},
		{"v3.6.7", "3.6.8-0"},
	}
	for _, tc := range cases {
		o, err := upgrade.EtcdTagVersion(tc.older)
		if err != nil {
			t.Fatalf("EtcdTagVersion(%q): %v", tc.older, err)
		}
		n, err := upgrade.EtcdTagVersion(tc.newer)
		if err != nil {
			t.Fatalf("EtcdTagVersion(%q): %v", tc.newer, err)
		}
		if !o.LessThan(n) || n.LessThan(o) {
			t.Errorf("want %q (%v) older than %q (%v)", tc.older, o, tc.newer, n)
		}
	}
	a, _ := upgrade.EtcdTagVersion("3.6.8-0")
	b, _ := upgrade.EtcdTagVersion("3.6.8-0")
	if a.LessThan(b) || b.LessThan(a) {
		t.Errorf("3.6.8-0 compared with itself: not equal")
	}
	if a.Major() != 3 || a.Minor() != 6 || a.Patch() != 8 {
		t.Errorf("EtcdTagVersion(3.6.8-0) = %v, want 3.6.8", a)
	}
	for _, bad := range []string{"", "latest", "-0"} {
		if v, err := upgrade.EtcdTagVersion(bad); err == nil {
			t.Errorf("EtcdTagVersion(%q) = %v, want an error", bad, v)
		} else if !strings.Contains(err.Error(), bad) {
			t.Errorf("EtcdTagVersion(%q) error %q does not name the tag", bad, err)
		}
	}
}

func TestImageTag(t *testing.T) {
	cases := map[string]string{
		"registry.k8s.io/etcd:3.6.8-0":                   "3.6.8-0",
		"registry.k8s.io/coredns/coredns:v1.14.2":        "v1.14.2",
		"host:5000/x:v1":                                 "v1",
		"host:5000/x":                                    "",
		"host:5000/team/x:v1.36.3":                       "v1.36.3",
		"kube-apiserver":                                 "",
		"kube-apiserver:v1.36.3":                         "v1.36.3",
		"registry.k8s.io/etcd:3.6.8-0@sha256:0123abcdef": "3.6.8-0",
		"registry.k8s.io/etcd@sha256:0123abcdef":         "",
		"host:5000/x@sha256:0123abcdef":                  "",
		"":                                               "",
	}
	for ref, want := range cases {
		if got := upgrade.ImageTag(ref); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", ref, got, want)
		}
	}
}
