package staticpod

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Compare reports how the manifest got differs from want, both YAML,
// compared as parsed documents: key order and formatting do not count.
// The command of each container compares its first word exactly and its
// flags as a multiset; flags that match but come in another order give one
// note ending in "(order only)". No differences gives an empty list.
// It is meant for checking manifests against upstream kubeadm's.
func Compare(want, got []byte) ([]string, error) {
	var w, g any
	if err := yaml.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("parsing the expected manifest: %w", err)
	}
	if err := yaml.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("parsing the manifest: %w", err)
	}
	var diffs []string
	compareValues("", w, g, &diffs)
	return diffs, nil
}

func compareValues(path string, w, g any, diffs *[]string) {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", pathOrRoot(path), show(w), show(g)))
			return
		}
		keys := map[string]bool{}
		for k := range wv {
			keys[k] = true
		}
		for k := range gv {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			p := path + "." + k
			wx, inW := wv[k]
			gx, inG := gv[k]
			switch {
			case !inG:
				*diffs = append(*diffs, fmt.Sprintf("%s: missing (want %s)", p, show(wx)))
			case !inW:
				*diffs = append(*diffs, fmt.Sprintf("%s: unexpected %s", p, show(gx)))
			case k == "command":
				compareCommand(p, wx, gx, diffs)
			default:
				compareValues(p, wx, gx, diffs)
			}
		}
	case []any:
		gv, ok := g.([]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", pathOrRoot(path), show(w), show(g)))
			return
		}
		if len(wv) != len(gv) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %d items %s, got %d items %s", pathOrRoot(path), len(wv), show(w), len(gv), show(g)))
			return
		}
		for i := range wv {
			compareValues(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i], diffs)
		}
	default:
		if !reflect.DeepEqual(w, g) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", pathOrRoot(path), show(w), show(g)))
		}
	}
}

// compareCommand compares a command line: the first word exactly, the rest
// as a multiset.
func compareCommand(path string, w, g any, diffs *[]string) {
	ws, wok := stringList(w)
	gs, gok := stringList(g)
	if !wok || !gok || len(ws) == 0 || len(gs) == 0 {
		compareValues(path, w, g, diffs)
		return
	}
	if ws[0] != gs[0] {
		*diffs = append(*diffs, fmt.Sprintf("%s[0]: want %q, got %q", path, ws[0], gs[0]))
	}
	count := map[string]int{}
	for _, f := range ws[1:] {
		count[f]++
	}
	for _, f := range gs[1:] {
		count[f]--
	}
	same := true
	for _, f := range slices.Sorted(maps.Keys(count)) {
		switch n := count[f]; {
		case n > 0:
			same = false
			*diffs = append(*diffs, fmt.Sprintf("%s: missing flag %q (x%d)", path, f, n))
		case n < 0:
			same = false
			*diffs = append(*diffs, fmt.Sprintf("%s: unexpected flag %q (x%d)", path, f, -n))
		}
	}
	if same && !reflect.DeepEqual(ws[1:], gs[1:]) {
		*diffs = append(*diffs, fmt.Sprintf("%s: same flags, different order "+orderOnlySuffix, path))
	}
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

func pathOrRoot(p string) string {
	if p == "" {
		return "(document)"
	}
	return p
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// OrderOnly reports whether every difference Compare found is a flag order
// difference.
func OrderOnly(diffs []string) bool {
	for _, d := range diffs {
		if !strings.HasSuffix(d, orderOnlySuffix) {
			return false
		}
	}
	return true
}

const orderOnlySuffix = "(order only)"
