package arch

import (
	"strings"
	"testing"
)

// The layers of docs/architecture.md, from the top: cmd → cli → phases →
// domain packages → leaves. A package may import a lower layer and, in the
// domain layer, another domain package; nothing imports upwards.
const (
	layerLeaf = iota
	layerDomain
	layerPhases
	layerCLI
	layerCmd
)

// leaves import no package of ours, except the configuration types.
var leaves = []string{
	"internal/atomicfile", "internal/boundedread", "internal/redirectpolicy",
	"internal/redact", "internal/exitcode", "internal/machine",
	"internal/workflow", "internal/cri", "internal/apis/", "pkg/apis/",
}

func layerOf(path string) int {
	rel := strings.TrimPrefix(path, module+"/")
	switch {
	case strings.HasPrefix(rel, "cmd/"):
		return layerCmd
	case rel == "internal/cli" || strings.HasPrefix(rel, "internal/cli/"):
		return layerCLI
	case strings.HasPrefix(rel, "internal/phases/"):
		return layerPhases
	}
	for _, l := range leaves {
		if rel == strings.TrimSuffix(l, "/") || strings.HasPrefix(rel, l) {
			return layerLeaf
		}
	}
	return layerDomain
}

// allowedSideways are the imports inside the phases layer that rule 4
// allows: join and upgrade run init's phases on a view of their data.
var allowedSideways = map[string]string{
	"internal/phases/joinphases":    "internal/phases/initphases",
	"internal/phases/upgradephases": "internal/phases/initphases",
}

// importProblem says what is wrong with package from importing package to
// (both relative to the module), or "" when the layers allow it.
func importProblem(from, to string) string {
	lf, lt := layerOf(module+"/"+from), layerOf(module+"/"+to)
	switch {
	case strings.HasPrefix(from, "pkg/apis/") && strings.HasPrefix(to, "internal/"):
		return "the public configuration types stand alone"
	case lt > lf:
		return "it is a higher layer"
	case lt == lf && lf == layerPhases && allowedSideways[from] != to:
		return "phases of one workflow import no other's, except init's (rule 4)"
	case lt == lf && lf == layerLeaf && !strings.HasPrefix(to, "internal/apis/") && !strings.HasPrefix(to, "pkg/apis/"):
		return "a leaf imports only the configuration types"
	}
	return ""
}

// TestImportLayers: imports go downwards only. cli is imported by cmd
// alone, phases by cli (and init's by join's and upgrade's), domain
// packages (pkg/config among them) never import a phase or cli, leaves
// import nothing of ours but the configuration types, and the public
// configuration types (pkg/apis) import nothing of internal/.
func TestImportLayers(t *testing.T) {
	for _, p := range ours(listDeps(t, "./cmd/kubeadm", "./pkg/...")) {
		from := strings.TrimPrefix(p.ImportPath, module+"/")
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			if why := importProblem(from, to); why != "" {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
	}
}

func TestImportProblem(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"cmd/kubeadm", "internal/cli", true},
		{"internal/cli", "internal/phases/initphases", true},
		{"internal/phases/joinphases", "internal/phases/initphases", true},
		{"internal/phases/initphases", "internal/phases/joinphases", false},
		{"internal/phases/resetphases", "internal/phases/initphases", false},
		{"internal/pki", "internal/phases/initphases", false},
		{"internal/upgrade", "internal/cli", false},
		{"internal/upgrade", "internal/staticpod", true},
		{"internal/atomicfile", "internal/pki", false},
		{"internal/apis/kubeadm", "pkg/apis/kubeadm/v1beta4", true},
		{"pkg/apis/kubeadm/v1beta4", "internal/boundedread", false},
		{"pkg/config", "internal/config", true},
	} {
		if got := importProblem(tc.from, tc.to); (got == "") != tc.ok {
			t.Errorf("%s → %s: problem %q, want allowed=%v", tc.from, tc.to, got, tc.ok)
		}
	}
}
