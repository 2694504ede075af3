//go:build compat

// Package compat runs this repository's kubeadm and the pinned upstream
// kubeadm (built by hack/build-upstream.sh and used only as a black box) on
// the same inputs and reports every observable difference. Upstream is the
// oracle: there are no golden files.
//
//	go test -tags compat ./test/compat/ -count=1 -v
//
// Environment overrides (optional): KUBEADM_COMPAT_OURS and
// KUBEADM_COMPAT_UPSTREAM name prebuilt binaries to use instead of building.
package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// k8sVersion is the upstream release we must be a drop-in for.
	k8sVersion = "v1.37.2"
	// olderVersion is a release of the minor version before, which
	// k8sVersion's kubeadm also deploys (with its own images and flags):
	// the configuration files name it, and the node files are compared
	// for both versions.
	olderVersion = "v1.36.3"
	// cmdTimeout bounds every single kubeadm invocation.
	cmdTimeout = 60 * time.Second
)

var (
	repoRoot    string
	configDir   string
	oursBin     string
	upstreamBin string
	setupErr    error
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		tmp, err := os.MkdirTemp("", "kubeadm-compat-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "compat:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		setupErr = setup(tmp)
		if setupErr != nil {
			fmt.Fprintln(os.Stderr, "compat: setup failed:", setupErr)
		}
		return m.Run()
	}())
}

// setup finds the repository, builds our binary and makes sure upstream's exists.
func setup(tmp string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repoRoot = filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		return fmt.Errorf("repository root not found from %s: %w", wd, err)
	}
	configDir = filepath.Join(repoRoot, "testdata", "config")

	if p := os.Getenv("KUBEADM_COMPAT_OURS"); p != "" {
		oursBin = p
	} else {
		oursBin = filepath.Join(tmp, "kubeadm")
		cmd := exec.Command("go", "build", "-o", oursBin, "./cmd/kubeadm")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building our kubeadm: %v\n%s", err, out)
		}
	}

	if p := os.Getenv("KUBEADM_COMPAT_UPSTREAM"); p != "" {
		upstreamBin = p
	} else {
		// Idempotent: returns at once when the binary is already cached.
		cmd := exec.Command(filepath.Join(repoRoot, "hack", "build-upstream.sh"), "kubeadm")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building upstream kubeadm: %v\n%s", err, out)
		}
		upstreamBin = filepath.Join(repoRoot, ".cache", "upstream", k8sVersion, "kubeadm")
	}
	for _, b := range []string{oursBin, upstreamBin} {
		if _, err := os.Stat(b); err != nil {
			return err
		}
	}
	return nil
}

func requireSetup(t *testing.T) {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("setup failed: %v", setupErr)
	}
}

// ---------------------------------------------------------------------------
// Running the binaries

// result is what one invocation of one binary produced.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
	err    error  // the process could not be run or timed out
	dir    string // the invocation's private output directory ({out})
}

// invoke runs bin with args. "{out}" in an argument is replaced by a fresh
// directory private to this invocation (for --new-config and the like). HOME,
// TMPDIR and the working directory are temporary too, and the environment is
// otherwise empty except PATH, so neither binary sees the developer's files
// or proxies and nothing is written outside temp dirs.
func invoke(t *testing.T, bin string, args ...string) result {
	t.Helper()
	base := t.TempDir()
	out := filepath.Join(base, "out")
	home := filepath.Join(base, "home")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{out, home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = strings.ReplaceAll(a, "{out}", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, expanded...)
	cmd.Dir = base
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LANG=C"}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := result{args: args, stdout: so.String(), stderr: se.String(), dir: out}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err, r.code = fmt.Errorf("timed out after %v", cmdTimeout), -1
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.err, r.code = err, -1
	}
	return r
}

// pair runs both binaries with the same arguments.
func pair(t *testing.T, args ...string) (ours, up result) {
	t.Helper()
	return invoke(t, oursBin, args...), invoke(t, upstreamBin, args...)
}

// ---------------------------------------------------------------------------
// Collecting differences

// diffs collects every difference of one case; finish reports them all at once.
type diffs struct{ lines []string }

func (d *diffs) add(format string, args ...any) {
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}

// finish fails t with every difference found, followed by both sides' raw
// streams so the report can be read without re-running anything.
func (d *diffs) finish(t *testing.T, ours, up result) {
	t.Helper()
	if len(d.lines) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kubeadm %s: %d difference(s) from upstream:\n", strings.Join(ours.args, " "), len(d.lines))
	for _, l := range d.lines {
		fmt.Fprintf(&b, "  - %s\n", l)
	}
	fmt.Fprintf(&b, "  ours     exit=%d stdout:\n%s  ours     stderr:\n%s", ours.code, indent(ours.stdout), indent(stripKlogHeaders(ours.stderr)))
	fmt.Fprintf(&b, "  upstream exit=%d stdout:\n%s  upstream stderr:\n%s", up.code, indent(up.stdout), indent(stripKlogHeaders(up.stderr)))
	t.Error(b.String())
}

func indent(s string) string {
	const max = 4000
	if len(s) > max {
		s = s[:max] + "\n... (truncated)"
	}
	if strings.TrimSpace(s) == "" {
		return "      <empty>\n"
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("      | " + l + "\n")
	}
	return b.String()
}

// compareExit compares exit codes and reports a binary that could not run.
func compareExit(d *diffs, ours, up result) {
	if ours.err != nil {
		d.add("ours did not run: %v", ours.err)
	}
	if up.err != nil {
		d.add("upstream did not run: %v", up.err)
	}
	if !sameVerdict(ours.code, up.code) {
		d.add("exit code: ours %d upstream %d", ours.code, up.code)
	}
}

// klogHeader matches the klog prefix "W1122 01:04:32.378069   16421 file.go:108] ",
// whose time, pid and source location are inherently run/implementation dependent.
var klogHeader = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^ \]]+:\d+\] `)

func stripKlogHeaders(s string) string { return klogHeader.ReplaceAllString(s, "") }

// compareStderrPresence fails when exactly one side wrote to stderr: a missing
// or extra warning is a user-visible difference. The texts themselves are only
// shown (in the failure report), not compared, as wording may legitimately differ.
//
// For the inputs of warningFiles, ours must warn naming the field, and a
// warning only ours prints is no difference.
func compareStderrPresence(d *diffs, ours, up result) {
	o, u := strings.TrimSpace(ours.stderr) != "", strings.TrimSpace(up.stderr) != ""
	if field, ok := warnedInput(ours.args); ok && ours.code == 0 {
		if !strings.Contains(ours.stderr, field) {
			d.add("stderr: ours does not warn about %s", field)
		}
		if !u {
			return
		}
	}
	if o != u {
		d.add("stderr: ours %s, upstream %s", emptiness(o), emptiness(u))
	}
}

// warnedInput reports the field ours warns about for a configuration file
// of warningFiles among args.
func warnedInput(args []string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "--") && strings.HasSuffix(args[i], "config") {
			if f, ok := warningFiles[filepath.Base(args[i+1])]; ok {
				return f, true
			}
		}
	}
	return "", false
}

func emptiness(nonEmpty bool) string {
	if nonEmpty {
		return "non-empty"
	}
	return "empty"
}

// ---------------------------------------------------------------------------
// Structured comparison

// show renders a parsed value compactly for a difference line.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func child(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// diffValue reports every leaf where ours and up differ. An absent key is
// distinct from an explicit null, as it is in kubeadm's printed YAML.
func diffValue(d *diffs, path string, ours, up any) {
	switch u := up.(type) {
	case map[string]any:
		o, ok := ours.(map[string]any)
		if !ok {
			d.add("%s: ours %s upstream %s", at(path), show(ours), show(up))
			return
		}
		keys := map[string]bool{}
		for k := range o {
			keys[k] = true
		}
		for k := range u {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			ov, oin := o[k]
			uv, uin := u[k]
			p := child(path, k)
			switch {
			case !oin:
				d.add("%s: ours <absent> upstream %s", p, show(uv))
			case !uin:
				d.add("%s: ours %s upstream <absent>", p, show(ov))
			default:
				diffValue(d, p, ov, uv)
			}
		}
	case []any:
		o, ok := ours.([]any)
		if !ok {
			d.add("%s: ours %s upstream %s", at(path), show(ours), show(up))
			return
		}
		if len(o) != len(u) {
			d.add("%s: ours has %d item(s) upstream %d", at(path), len(o), len(u))
		}
		for i := 0; i < len(o) || i < len(u); i++ {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(o):
				d.add("%s: ours <absent> upstream %s", p, show(u[i]))
			case i >= len(u):
				d.add("%s: ours %s upstream <absent>", p, show(o[i]))
			default:
				diffValue(d, p, o[i], u[i])
			}
		}
	default:
		if !reflect.DeepEqual(ours, up) {
			d.add("%s: ours %s upstream %s", at(path), show(ours), show(up))
		}
	}
}

// at names a path for a difference line; the empty path is the whole document.
func at(path string) string {
	if path == "" {
		return "<document root>"
	}
	return path
}

// doc is one parsed YAML document of a multi-document stream.
type doc struct {
	key  string // "apiVersion, Kind=kind", or "document[i]" without them
	name string // path prefix for differences, e.g. "clusterConfiguration"
	val  any
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// parseDocs splits a YAML stream on "---" lines and parses each non-empty document.
func parseDocs(s string) ([]doc, error) {
	var docs []doc
	for i, part := range docSeparator.Split(s, -1) {
		var v any
		if err := yaml.Unmarshal([]byte(part), &v); err != nil {
			return docs, fmt.Errorf("document %d: %v", i, err)
		}
		if v == nil {
			continue // empty or comment-only document
		}
		d := doc{key: fmt.Sprintf("document[%d]", len(docs)), name: fmt.Sprintf("document[%d]", len(docs)), val: v}
		if m, ok := v.(map[string]any); ok {
			av, _ := m["apiVersion"].(string)
			k, _ := m["kind"].(string)
			if av != "" || k != "" {
				d.key = av + ", Kind=" + k
				d.name = lowerFirst(k)
			}
		}
		docs = append(docs, d)
	}
	return docs, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return "<no kind>"
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// compareDocs compares two multi-document YAML streams: documents are matched
// by apiVersion+kind (not position), then compared field by field; the
// document order is checked separately.
func compareDocs(d *diffs, what, ours, up string, normalize func(name string, ours, up any)) {
	od, oerr := parseDocs(ours)
	ud, uerr := parseDocs(up)
	if uerr != nil {
		d.add("%s: upstream's output does not parse as YAML (%v)", what, uerr)
		return
	}
	if oerr != nil {
		d.add("%s: ours does not parse as YAML: %v", what, oerr)
		return
	}
	index := func(ds []doc) (map[string]doc, []string) {
		m := map[string]doc{}
		var order []string
		seen := map[string]int{}
		for _, x := range ds {
			// A kind repeated within one stream is matched by its rank among
			// the documents of that kind.
			seen[x.key]++
			k := x.key
			if n := seen[x.key]; n > 1 {
				k = fmt.Sprintf("%s #%d", x.key, n)
				x.name = fmt.Sprintf("%s#%d", x.name, n)
			}
			m[k] = x
			order = append(order, k)
		}
		return m, order
	}
	om, oorder := index(od)
	um, uorder := index(ud)
	for _, k := range uorder {
		if _, ok := om[k]; !ok {
			d.add("%s: document %s: ours <absent>", what, k)
		}
	}
	for _, k := range oorder {
		if _, ok := um[k]; !ok {
			d.add("%s: document %s: ours has it, upstream <absent>", what, k)
		}
	}
	var common []string
	for _, k := range uorder {
		if _, ok := om[k]; ok {
			common = append(common, k)
		}
	}
	var ocommon []string
	for _, k := range oorder {
		if _, ok := um[k]; ok {
			ocommon = append(ocommon, k)
		}
	}
	if !reflect.DeepEqual(common, ocommon) {
		d.add("%s: document order: ours %q upstream %q", what, ocommon, common)
	}
	for _, k := range common {
		o, u := om[k], um[k]
		if normalize != nil {
			normalize(u.name, o.val, u.val)
		}
		diffValue(d, prefixed(what, u.name), o.val, u.val)
	}
}

func prefixed(what, name string) string {
	if what == "" || what == "stdout" {
		return name
	}
	return what + ":" + name
}

// compareJSON compares two single JSON documents; ours must be valid JSON
// (not merely YAML) because -o json promises JSON.
func compareJSON(d *diffs, what, ours, up string) {
	var o, u any
	if err := json.Unmarshal([]byte(up), &u); err != nil {
		d.add("%s: upstream's output is not JSON (%v)", what, err)
		return
	}
	if err := json.Unmarshal([]byte(ours), &o); err != nil {
		d.add("%s: ours is not valid JSON: %v", what, err)
		return
	}
	diffValue(d, what, o, u)
}

// compareLines compares plain-text output line by line (trailing blanks ignored).
func compareLines(d *diffs, what, ours, up string) {
	split := func(s string) []string {
		s = strings.TrimRight(s, "\n")
		if s == "" {
			return nil
		}
		ls := strings.Split(s, "\n")
		for i := range ls {
			ls[i] = strings.TrimRight(ls[i], " \t\r")
		}
		return ls
	}
	o, u := split(ours), split(up)
	if len(o) != len(u) {
		d.add("%s: ours has %d line(s) upstream %d", what, len(o), len(u))
	}
	for i := 0; i < len(o) || i < len(u); i++ {
		switch {
		case i >= len(o):
			d.add("%s line %d: ours <absent> upstream %q", what, i+1, u[i])
		case i >= len(u):
			d.add("%s line %d: ours %q upstream <absent>", what, i+1, o[i])
		case o[i] != u[i]:
			d.add("%s line %d: ours %q upstream %q", what, i+1, o[i], u[i])
		}
	}
}

// ---------------------------------------------------------------------------
// Inputs

// configFiles lists testdata/config/*.yaml whose name starts with one of prefixes.
func configFiles(t *testing.T, prefixes ...string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(configDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		base := filepath.Base(f)
		for _, p := range prefixes {
			if strings.HasPrefix(base, p) {
				out = append(out, f)
				break
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no config files with prefixes %v in %s", prefixes, configDir)
	}
	return out
}

var allPrefixes = []string{"valid-", "invalid-", "stricter-"}

// ---------------------------------------------------------------------------
// Cases

// TestConfigPrint compares `kubeadm config print *-defaults`.
func TestConfigPrint(t *testing.T) {
	requireSetup(t)
	cases := [][]string{
		{"init-defaults"},
		{"join-defaults"},
		{"reset-defaults"},
		{"upgrade-defaults"},
		{"init-defaults", "--component-configs", "KubeletConfiguration,KubeProxyConfiguration"},
		{"init-defaults", "--component-configs", "KubeletConfiguration"},
		{"init-defaults", "--component-configs", "KubeProxyConfiguration"},
		// Upstream has no --component-configs on join-defaults: an error (exit 1).
		{"join-defaults", "--component-configs", "KubeletConfiguration"},
		// An unknown component config name is an error (exit 1).
		{"init-defaults", "--component-configs", "NoSuchConfiguration"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c, " "), func(t *testing.T) {
			ours, up := pair(t, append([]string{"config", "print"}, c...)...)
			if extraFlagCases[strings.Join(c, " ")] {
				if ours.code != 0 || up.code == 0 {
					t.Errorf("expected only ours to accept %v: ours exit %d, upstream exit %d", c, ours.code, up.code)
				}
				return
			}
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			// Note: join-defaults contains nodeRegistration.name, the machine's
			// hostname; both binaries run on the same machine, so it is not normalized.
			compareDocs(&d, "stdout", ours.stdout, up.stdout, nil)
			d.finish(t, ours, up)
		})
	}
}

// TestConfigImagesList compares `kubeadm config images list` with and
// without configuration files, in text (as lines), JSON and YAML.
func TestConfigImagesList(t *testing.T) {
	requireSetup(t)
	type imagesCase struct {
		name string
		args []string
	}
	var cases []imagesCase
	flagCases := []struct {
		name string
		args []string
	}{
		// No version at all: default "stable-1" needs dl.k8s.io; without a
		// network both fall back to their own version after a warning.
		{"no-flags", nil},
		{"kubernetes-version", []string{"--kubernetes-version", k8sVersion}},
		{"kubernetes-version-without-v", []string{"--kubernetes-version", strings.TrimPrefix(k8sVersion, "v")}},
		{"kubernetes-version-older-minor", []string{"--kubernetes-version", olderVersion}},
		{"kubernetes-version-older-minor-zero", []string{"--kubernetes-version", "v1.36.0"}},
		{"kubernetes-version-newer-minor", []string{"--kubernetes-version", "v1.38.0"}},
		{"kubernetes-version-unsupported", []string{"--kubernetes-version", "v1.35.0"}},
		{"kubernetes-version-label-stable", []string{"--kubernetes-version", "stable"}},
		{"image-repository", []string{"--kubernetes-version", k8sVersion, "--image-repository", "registry.example.test/k8s"}},
		{"image-repository-no-version", []string{"--image-repository", "registry.example.test/k8s"}},
	}
	for _, fc := range flagCases {
		for _, format := range []string{"text", "json", "yaml"} {
			cases = append(cases, imagesCase{"flags=" + fc.name + "/" + format, append(append([]string{}, fc.args...), "-o", format)})
		}
		// And without -o at all (default text).
		cases = append(cases, imagesCase{"flags=" + fc.name + "/default", fc.args})
	}
	for _, f := range configFiles(t, allPrefixes...) {
		for _, format := range []string{"text", "json"} {
			cases = append(cases, imagesCase{"config=" + filepath.Base(f) + "/" + format, []string{"--config", f, "-o", format}})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ours, up := pair(t, append([]string{"config", "images", "list"}, c.args...)...)
			if checkStricter(t, c.args, ours, up) {
				return
			}
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			if up.code == 0 {
				switch {
				case hasArg(c.args, "-o", "json"):
					compareJSON(&d, "", ours.stdout, up.stdout)
				case hasArg(c.args, "-o", "yaml"):
					compareDocs(&d, "stdout", ours.stdout, up.stdout, nil)
				default:
					compareLines(&d, "stdout", ours.stdout, up.stdout)
				}
			} else {
				compareLines(&d, "stdout", ours.stdout, up.stdout)
			}
			d.finish(t, ours, up)
		})
	}
}

func hasArg(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// tokenShape is the shape of a bootstrap token.
var tokenShape = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// normalizeGeneratedTokens replaces bootstrapTokens[*].token by a placeholder
// on both sides when both are well-formed and the value is not in the input:
// migrate fills in a freshly generated random token when the input has none,
// so its value is inherently random. A token given in the input must survive
// unchanged, so it is never normalized.
func normalizeGeneratedTokens(input string) func(name string, ours, up any) {
	return func(name string, ours, up any) {
		if name != "initConfiguration" {
			return
		}
		ot := tokenList(ours)
		ut := tokenList(up)
		for i := 0; i < len(ot) && i < len(ut); i++ {
			o, _ := ot[i]["token"].(string)
			u, _ := ut[i]["token"].(string)
			if tokenShape.MatchString(o) && tokenShape.MatchString(u) &&
				!strings.Contains(input, o) && !strings.Contains(input, u) {
				ot[i]["token"] = "<generated token>"
				ut[i]["token"] = "<generated token>"
			}
		}
	}
}

func tokenList(v any) []map[string]any {
	m, _ := v.(map[string]any)
	l, _ := m["bootstrapTokens"].([]any)
	var out []map[string]any
	for _, x := range l {
		if t, ok := x.(map[string]any); ok {
			out = append(out, t)
		}
	}
	return out
}

// TestConfigMigrate compares the files written by
// `kubeadm config migrate --old-config F --new-config NEW` for every input
// (valid ones check defaulting, invalid ones refusal, the removed v1beta3
// included), plus the stdout form for a few inputs.
func TestConfigMigrate(t *testing.T) {
	requireSetup(t)
	for _, f := range configFiles(t, "valid-", "invalid-") {
		input, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			ours, up := pair(t, "config", "migrate", "--old-config", f, "--new-config", "{out}/new.yaml")
			if checkStricter(t, []string{"--config", f}, ours, up) {
				return
			}
			if migrateSucceedsWhereUpstreamFails[filepath.Base(f)] {
				if ours.code != 0 || up.code == 0 {
					t.Errorf("expected only ours to migrate %s: ours exit %d, upstream exit %d", filepath.Base(f), ours.code, up.code)
				}
				return
			}
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			compareLines(&d, "stdout", ours.stdout, up.stdout)
			on, oerr := os.ReadFile(filepath.Join(ours.dir, "new.yaml"))
			un, uerr := os.ReadFile(filepath.Join(up.dir, "new.yaml"))
			switch {
			case uerr != nil && oerr == nil:
				d.add("--new-config: ours wrote a file, upstream did not")
			case uerr == nil && oerr != nil:
				d.add("--new-config: ours did not write the file (%v)", oerr)
			case uerr == nil:
				compareDocs(&d, "", string(on), string(un), both(normalizeGeneratedTokens(string(input)), upstreamZeroHealthCheck))
			}
			d.finish(t, ours, up)
		})
	}
	for _, name := range []string{"invalid-apiversion-v1beta3.yaml", "valid-etcd-local.yaml", "valid-init-full.yaml"} {
		f := filepath.Join(configDir, name)
		input, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("stdout/"+name, func(t *testing.T) {
			ours, up := pair(t, "config", "migrate", "--old-config", f)
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			compareDocs(&d, "stdout", ours.stdout, up.stdout, both(normalizeGeneratedTokens(string(input)), upstreamZeroHealthCheck))
			d.finish(t, ours, up)
		})
	}
}

// Extraction of the facts an upstream error message names, which ours must
// name too (wording may differ).
var (
	// "localAPIEndpoint.bindPort: Invalid value: ..." and friends.
	fieldErrorPath = regexp.MustCompile(`(?:^|[\s\[,])([a-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+|\[\d+\])*): (?:Invalid value|Unsupported value|Required value|Forbidden|Duplicate value|Too many|Too long|Not found)`)
	// strict decoding: unknown field "networking.podSubnetz".
	unknownFieldPath = regexp.MustCompile(`unknown field "([^"]+)"`)
	// strict decoding: line 6: key "clusterName" already set in map.
	duplicateKey = regexp.MustCompile(`key "([^"]+)" already set`)
	// old or unknown API versions: "kubeadm.k8s.io/v1beta2", Version:"v1alpha9", Kind:"FooConfiguration".
	apiGroupVersion = regexp.MustCompile(`"(kubeadm\.k8s\.io/v[0-9a-z]+)"`)
	goVersionField  = regexp.MustCompile(`Version:"(v[0-9a-z]+)"`)
	goKindField     = regexp.MustCompile(`unknown configuration APIs: .*Kind:"([A-Za-z]+)"`)
	// The hint naming the last release able to migrate an old API: "kubeadm v1.22".
	releaseHint = regexp.MustCompile(`kubeadm (v1\.\d+)`)
)

// mentionsOf lists what upstream's error names that ours must name as well.
func mentionsOf(msg string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, re := range []*regexp.Regexp{fieldErrorPath, unknownFieldPath, duplicateKey, apiGroupVersion, goVersionField, goKindField, releaseHint} {
		for _, m := range re.FindAllStringSubmatch(msg, -1) {
			add(m[1])
		}
	}
	return out
}

// TestConfigValidate compares `kubeadm config validate --config F` for every
// file: the exit code, stdout ("ok") for valid files, and for rejected ones
// that ours names the same field paths / API versions as upstream. Both
// messages are always logged side by side.
func TestConfigValidate(t *testing.T) {
	requireSetup(t)
	for _, f := range configFiles(t, allPrefixes...) {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			ours, up := pair(t, "config", "validate", "--config", f)
			if checkStricter(t, []string{"--config", f}, ours, up) {
				return
			}
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			compareLines(&d, "stdout", ours.stdout, up.stdout)
			if strings.HasPrefix(base, "invalid-") && up.code == 0 {
				d.add("test data: upstream accepts %s; it is not an invalid input", base)
			}
			if strings.HasPrefix(base, "valid-") && up.code != 0 {
				d.add("test data: upstream rejects %s; it is not a valid input", base)
			}
			if up.code != 0 {
				oursMsg := stripKlogHeaders(ours.stderr)
				upMsg := stripKlogHeaders(up.stderr)
				t.Logf("messages:\n  upstream (exit %d): %s\n  ours     (exit %d): %s",
					up.code, strings.TrimSpace(upMsg), ours.code, strings.TrimSpace(oursMsg))
				for _, m := range mentionsOf(upMsg) {
					if !strings.Contains(oursMsg, m) {
						d.add("error message: upstream names %q, ours does not", m)
					}
				}
			}
			d.finish(t, ours, up)
		})
	}
}

// versionStamps normalizes what describes a particular build rather than the
// release: the commit and build date are link-time stamps (upstream's are set
// by hack/build-upstream.sh, ours by our own build) and goVersion depends on
// the toolchain each was built with.
var versionStamps = []string{"gitCommit", "buildDate", "goVersion"}

var versionStampText = regexp.MustCompile(`(GitCommit|BuildDate|GoVersion):"[^"]*"`)

// TestVersion compares `kubeadm version` in every output format.
func TestVersion(t *testing.T) {
	requireSetup(t)
	normalize := func(_ string, ours, up any) {
		for _, v := range []any{ours, up} {
			m, _ := v.(map[string]any)
			cv, _ := m["clientVersion"].(map[string]any)
			delete(cv, projectVersionKey)
			for _, k := range versionStamps {
				if _, ok := cv[k]; ok {
					cv[k] = "<build stamp>"
				}
			}
		}
	}
	for _, format := range []string{"", "short", "json", "yaml", "bogus"} {
		name, args := "default", []string{"version"}
		if format != "" {
			name, args = format, []string{"version", "-o", format}
		}
		t.Run(name, func(t *testing.T) {
			ours, up := pair(t, args...)
			var d diffs
			compareExit(&d, ours, up)
			compareStderrPresence(&d, ours, up)
			switch format {
			case "json":
				var o, u any
				oerr := json.Unmarshal([]byte(ours.stdout), &o)
				if err := json.Unmarshal([]byte(up.stdout), &u); err != nil {
					d.add("upstream's output is not JSON (%v)", err)
				} else if oerr != nil {
					d.add("ours is not valid JSON: %v", oerr)
				} else {
					normalize("", o, u)
					diffValue(&d, "", o, u)
				}
			case "yaml":
				compareDocs(&d, "stdout", ours.stdout, up.stdout, normalize)
			default:
				compareLines(&d, "stdout",
					versionStampText.ReplaceAllString(dropProjectVersionText(ours.stdout), `$1:"<build stamp>"`),
					versionStampText.ReplaceAllString(up.stdout, `$1:"<build stamp>"`))
			}
			d.finish(t, ours, up)
		})
	}
}

// TestTokenGenerate checks `kubeadm token generate`: its value is random, so
// only the exit code and the token's shape are compared.
func TestTokenGenerate(t *testing.T) {
	requireSetup(t)
	ours, up := pair(t, "token", "generate")
	var d diffs
	compareExit(&d, ours, up)
	compareStderrPresence(&d, ours, up)
	for _, r := range []struct {
		who string
		res result
	}{{"ours", ours}, {"upstream", up}} {
		if got := strings.TrimRight(r.res.stdout, "\n"); !tokenShape.MatchString(got) {
			d.add("stdout: %s printed %q, not one token of the form [a-z0-9]{6}.[a-z0-9]{16}", r.who, got)
		}
	}
	d.finish(t, ours, up)
}

// both chains two normalizers.
func both(a, b func(name string, ours, up any)) func(name string, ours, up any) {
	return func(name string, ours, up any) {
		a(name, ours, up)
		b(name, ours, up)
	}
}

// checkStricter handles the inputs we refuse on purpose (stricterFiles):
// upstream must accept them, ours must refuse with the validation exit
// code naming the field. It reports whether the case was one of those.
func checkStricter(t *testing.T, args []string, ours, up result) bool {
	t.Helper()
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--config" {
			continue
		}
		path, ok := isStricter(filepath.Base(args[i+1]))
		if !ok {
			return false
		}
		if up.code != 0 {
			t.Errorf("test data: upstream now refuses %s (exit %d); move it to invalid-", args[i+1], up.code)
		}
		if ours.code != validationExitCode || !hasField(ours.stderr, path) {
			t.Errorf("ours must refuse %s naming %s with exit %d; got exit %d: %s", args[i+1], path, validationExitCode, ours.code, ours.stderr)
		}
		return true
	}
	return false
}
