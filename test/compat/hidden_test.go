//go:build compat

package compat

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeadm-go/kubeadm/internal/cli"
)

// Help pages list neither hidden commands nor hidden flags, and a black
// box cannot be asked for them. Hidden names are found by probing each
// binary with candidate names: those our source declares (hidden or not)
// where upstream's help does not show them, the hidden commands and flags
// upstream is known to have (upstreamHidden), and, under each workflow's
// "phase" command, every phase name of every workflow. The verdict always
// comes from running both binaries.

// upstreamHidden are the hidden commands (value nil) and hidden flags of
// upstream kubeadm, by command path, from its release notes and reference
// documentation. The test reports an entry upstream does not accept.
var upstreamHidden = map[string][]string{
	// Deprecated since kubeadm.k8s.io/v1beta4 made extraArgs a list;
	// still accepted (map of flag=value).
	"init phase control-plane all":                {"apiserver-extra-args", "controller-manager-extra-args", "scheduler-extra-args"},
	"init phase control-plane apiserver":          {"apiserver-extra-args"},
	"init phase control-plane controller-manager": {"controller-manager-extra-args"},
	"init phase control-plane scheduler":          {"scheduler-extra-args"},
}

// flagKind is what a probe learns of a flag.
type flagKind string

const (
	noFlag    flagKind = "absent"
	boolFlag  flagKind = "bool"
	valueFlag flagKind = "taking a value"
)

// probeFlag asks bin whether the command at path accepts --name, and
// whether the flag takes a value: "--help --name" shows the help for a
// boolean flag, and fails with "flag needs an argument" for any other.
// --help comes first so nothing runs.
func probeFlag(t *testing.T, bin, path, name string) flagKind {
	t.Helper()
	r := invoke(t, bin, append(strings.Fields(path), "--help", "--"+name)...)
	out := r.stdout + r.stderr
	switch {
	case strings.Contains(out, "unknown flag: --"+name):
		return noFlag
	case strings.Contains(out, "flag needs an argument"):
		return valueFlag
	case r.code == 0:
		return boolFlag
	}
	t.Fatalf("%s %s --help --%s: exit %d, neither help nor a flag error:\n%s", bin, path, name, r.code, out)
	return noFlag
}

// probeCommand reports whether bin has the command at path: its help is
// shown, and is that command's (a group shows its own help for an unknown
// sub-command). A command that neither runs nor has sub-commands (an empty
// group) has no usage line at all.
func probeCommand(t *testing.T, bin, path string) bool {
	t.Helper()
	r := invoke(t, bin, append(strings.Fields(path), "--help")...)
	if r.code != 0 {
		return false
	}
	used := usagePath(r.stdout)
	return used == "" || used == strings.TrimSpace("kubeadm "+path)
}

// usagePath is the command path of a help page's first usage line, "" when
// it has none.
func usagePath(help string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if l != "Usage:" || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "  ") {
			continue
		}
		var words []string
		for _, w := range strings.Fields(lines[i+1]) {
			if strings.HasPrefix(w, "[") {
				break
			}
			words = append(words, w)
		}
		return strings.Join(words, " ")
	}
	return ""
}

// declared is our command tree as our source builds it, hidden commands
// and flags included: every command path with every flag name it accepts,
// and the set of hidden command paths.
type declared struct {
	flags  map[string][]string
	hidden map[string]bool
}

func ourDeclaredTree() declared {
	d := declared{flags: map[string][]string{}, hidden: map[string]bool{}}
	root := cli.NewRootCmd(cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var walk func(c *cobra.Command, path string, hidden bool)
	walk = func(c *cobra.Command, path string, hidden bool) {
		names := map[string]bool{}
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		}
		d.flags[path] = slices.Sorted(maps.Keys(names))
		if hidden {
			d.hidden[path] = true
		}
		for _, s := range c.Commands() {
			walk(s, strings.TrimSpace(path+" "+s.Name()), hidden || s.Hidden)
		}
	}
	walk(root, "", false)
	return d
}

// fullTree is commandTree plus the hidden commands and flags probing finds
// in bin: a hidden command's page is parsed from its help like any other
// (and the commands under it walked); a hidden flag is added to its
// command's page with the kind the probe found as its type.
func fullTree(t *testing.T, bin string, visibleUp map[string]helpPage, ours declared) (map[string]helpPage, map[string]bool) {
	t.Helper()
	tree := commandTree(t, bin)
	hidden := map[string]bool{}
	// Candidate commands.
	cands := map[string]bool{}
	for p := range ours.hidden {
		cands[p] = true
	}
	for p := range upstreamHidden {
		cands[p] = true
	}
	phaseNames := map[string]bool{}
	for _, pages := range []map[string]helpPage{tree, visibleUp} {
		for p := range pages {
			if before, name, ok := strings.Cut(p, " phase "); ok && before != "" {
				phaseNames[strings.Fields(name)[0]] = true
			}
		}
	}
	for p := range ours.flags {
		if _, name, ok := strings.Cut(p, " phase "); ok {
			phaseNames[strings.Fields(name)[0]] = true
		}
	}
	for _, pages := range []map[string]helpPage{tree, visibleUp} {
		for p := range pages {
			if strings.HasSuffix(p, " phase") {
				for n := range phaseNames {
					cands[p+" "+n] = true
				}
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(cands)) {
		if _, ok := tree[p]; ok {
			continue
		}
		if parent := parentPath(p); parent != "" {
			if _, ok := tree[parent]; !ok && !hidden[parent] {
				continue // under a command bin does not have
			}
		}
		if probeCommand(t, bin, p) {
			for q, page := range commandTreeAt(t, bin, strings.Fields(p)) {
				tree[q] = page
				hidden[q] = true
			}
		}
	}
	// Candidate flags, on every command bin has.
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		names := map[string]bool{}
		for _, n := range ours.flags[p] {
			names[n] = true
		}
		for _, n := range upstreamHidden[p] {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			if _, shown := tree[p].flags[n]; shown {
				continue
			}
			// Global flags reach every command; an empty group's help
			// just does not list them.
			if _, global := tree[""].flags[n]; global && p != "" {
				continue
			}
			if k := probeFlag(t, bin, p, n); k != noFlag {
				tree[p].flags[n] = flagInfo{typ: string(k), hidden: true}
			}
		}
	}
	return tree, hidden
}

func parentPath(p string) string {
	i := strings.LastIndex(p, " ")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// kindOf is the probe's view of a flag shown in help: boolean or not.
func kindOf(f flagInfo) string {
	if f.typ == string(boolFlag) {
		return string(boolFlag)
	}
	return string(valueFlag)
}

// skipProbeWorkflows are the workflows whose --skip-phases both binaries
// check before they need a cluster, with the arguments that get them
// there ({config} is a minimal init configuration in the --rootfs folder).
var skipProbeWorkflows = map[string][]string{
	"init":  {"init", "--dry-run", "--config", "/config.yaml"},
	"join":  {"join", "192.0.2.1:6443", "--token", "abcdef.0123456789abcdef", "--discovery-token-unsafe-skip-ca-verification"},
	"reset": {"reset", "--force"},
}

// upstreamHiddenPhases are upstream's hidden phases by workflow: they have
// no "phase" sub-command, but --skip-phases takes them.
var upstreamHiddenPhases = map[string][]string{
	"join": {"check-etcd"},
}

// phaseNames lists the phases of a workflow as --skip-phases names
// ("certs/ca") from the commands under "<workflow> phase" in trees.
func phaseNames(workflow string, trees ...map[string]helpPage) map[string]bool {
	names := map[string]bool{}
	prefix := workflow + " phase "
	for _, tree := range trees {
		for p := range tree {
			if rest, ok := strings.CutPrefix(p, prefix); ok {
				names[strings.ReplaceAll(rest, " ", "/")] = true
			}
		}
	}
	return names
}

// skipAccepted reports whether bin's workflow takes name in --skip-phases.
// name is followed by a name no workflow has, so that the run stops at the
// check either way; the error names name when it is refused (upstream's
// names the first bad name only), else the other one.
func skipAccepted(t *testing.T, bin string, args []string, root, name string) bool {
	t.Helper()
	const bogus = "zzz-no-such-phase"
	r := invoke(t, bin, append(slices.Clone(args), "--rootfs", root, "--skip-phases", name+","+bogus)...)
	refused := strings.Contains(r.stderr, "invalid phase name: "+name+"\n") || strings.Contains(r.stderr, `"`+name+`"`)
	if r.code == 0 || !refused && !strings.Contains(r.stderr, bogus) {
		t.Fatalf("%s %s --skip-phases %s,%s: exit %d, no word of the phase names:\n%s", bin, strings.Join(args, " "), name, bogus, r.code, r.stderr)
	}
	return !refused
}

// TestSkipPhases checks that --skip-phases takes every phase name upstream's
// takes, hidden phases included: every phase either binary has as a
// command under any workflow, and upstream's known hidden ones, are tried
// on each workflow that checks the names offline (upgrade apply and node
// need a cluster first). Phases only we have are listed in the log.
func TestSkipPhases(t *testing.T) {
	requireSetup(t)
	if os.Geteuid() != 0 {
		t.Skip("--rootfs needs root")
	}
	up, ours := commandTree(t, upstreamBin), commandTree(t, oursBin)
	decl := map[string]helpPage{}
	for p := range ourDeclaredTree().flags {
		decl[p] = helpPage{}
	}
	all := map[string]bool{}
	for _, w := range []string{"init", "join", "reset", "upgrade apply", "upgrade node"} {
		for n := range phaseNames(w, up, ours, decl) {
			all[strings.Split(n, "/")[0]] = true
		}
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(closingLinesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var problems, extras []string
	for _, w := range slices.Sorted(maps.Keys(skipProbeWorkflows)) {
		cands := phaseNames(w, up, ours, decl)
		for n := range all {
			cands[n] = true
		}
		for _, n := range upstreamHiddenPhases[w] {
			cands[n] = true
		}
		var hidden []string
		for _, n := range slices.Sorted(maps.Keys(cands)) {
			u := skipAccepted(t, upstreamBin, skipProbeWorkflows[w], newRoot(t, file, k8sVersion), n)
			o := skipAccepted(t, oursBin, skipProbeWorkflows[w], newRoot(t, file, k8sVersion), n)
			if u && !phaseNames(w, up)[n] {
				hidden = append(hidden, n)
			}
			switch {
			case u && !o:
				problems = append(problems, fmt.Sprintf("kubeadm %s --skip-phases %s: ours refuses it, upstream's takes it", w, n))
			case o && !u:
				extras = append(extras, w+" "+n)
			}
		}
		for _, n := range upstreamHiddenPhases[w] {
			if !slices.Contains(hidden, n) {
				problems = append(problems, fmt.Sprintf("test data: upstream's %s has no hidden phase %s", w, n))
			}
		}
		t.Logf("kubeadm %s: %d phase names tried; hidden in upstream: %v", w, len(cands), hidden)
	}
	t.Logf("phases only ours has: %s", strings.Join(extras, ", "))
	if len(problems) > 0 {
		t.Errorf("--skip-phases differs from upstream's:\n  %s", strings.Join(problems, "\n  "))
	}
}

// hiddenPhaseCommands are upstream's hidden phases of every workflow,
// upgrade's (which --skip-phases cannot probe offline) included.
var hiddenPhaseCommands = [][]string{
	{"join", "phase", "check-etcd"},
	{"upgrade", "apply", "phase", "kubeconfig"},
	{"upgrade", "node", "phase", "kubeconfig"},
}

// TestHiddenPhaseCommands: a hidden phase has no "phase" sub-command in
// upstream's: "<workflow> phase <hidden> --help" shows the help of
// "<workflow> phase" itself. Ours must do the same (only --help is asked,
// so neither binary runs the phase).
func TestHiddenPhaseCommands(t *testing.T) {
	requireSetup(t)
	usage := func(s string) string {
		_, after, _ := strings.Cut(s, "Usage:\n")
		line, _, _ := strings.Cut(after, "\n")
		return strings.TrimSpace(line)
	}
	for _, args := range hiddenPhaseCommands {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			help := append(slices.Clone(args), "--help")
			up, ours := invoke(t, upstreamBin, help...), invoke(t, oursBin, help...)
			parent := "kubeadm " + strings.Join(args[:len(args)-1], " ") + " [flags]"
			if usage(up.stdout) != parent {
				t.Fatalf("test data: upstream's %s --help shows %q, not its parent's help", name, usage(up.stdout))
			}
			if ours.code != up.code || usage(ours.stdout) != parent {
				t.Errorf("kubeadm %s --help: ours exit %d usage %q; upstream exit %d usage %q", name, ours.code, usage(ours.stdout), up.code, parent)
			}
		})
	}
}
