//go:build compat

package compat

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// flagInfo is what a command's help says of one flag.
type flagInfo struct {
	shorthand string // "o" for -o, "" for none
	typ       string // "string", "duration", ...; "bool" when none is shown
	def       string // the "(default ...)" text, "" when none is shown
	hidden    bool   // not in the help; found by probing (typ is then a flagKind)
}

// helpPage is what the help of one command lists: its sub-commands and
// its flags, global ones included.
type helpPage struct {
	commands []string
	flags    map[string]flagInfo
	usage    bool // the help has a usage line (the command runs or has sub-commands)
}

var (
	helpSection = regexp.MustCompile(`^(Available Commands|Additional Commands|Additional help topics|Flags|Global Flags):`)
	helpCommand = regexp.MustCompile(`^\s+(\S+)\s`)
	helpTopic   = regexp.MustCompile(`^\s+kubeadm(?: \S+)* (\S+)\s{2,}`)
	helpFlag    = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)(?: (\S+))?(?:\s|$)`)
	helpDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)
)

// parseHelp reads the sections of cobra's help that list sub-commands and
// flags. Descriptions are ours and not compared.
func parseHelp(text string) helpPage {
	page := helpPage{flags: map[string]flagInfo{}, usage: usagePath(text) != ""}
	section, current := "", ""
	for _, line := range strings.Split(text, "\n") {
		if m := helpSection.FindStringSubmatch(line); m != nil {
			section, current = m[1], ""
			continue
		}
		if line != "" && line[0] != ' ' {
			section, current = "", ""
			continue
		}
		switch section {
		case "Available Commands", "Additional Commands":
			if m := helpCommand.FindStringSubmatch(line); m != nil {
				page.commands = append(page.commands, m[1])
			}
		case "Additional help topics":
			// Commands that neither run nor have sub-commands, listed
			// by their full path ("kubeadm alpha").
			if m := helpTopic.FindStringSubmatch(line); m != nil {
				page.commands = append(page.commands, m[1])
			}
		case "Flags", "Global Flags":
			if m := helpFlag.FindStringSubmatch(line); m != nil {
				current = m[2]
				typ := m[3]
				if typ == "" {
					typ = "bool"
				}
				page.flags[current] = flagInfo{shorthand: m[1], typ: typ}
			}
			// A default is printed at the end of the flag's last line.
			if m := helpDefault.FindStringSubmatch(line); m != nil && current != "" {
				f := page.flags[current]
				f.def = m[1]
				page.flags[current] = f
			}
		}
	}
	return page
}

// commandTree runs "<bin> <path> --help" for every command it lists and
// returns the pages by command path ("" for kubeadm itself).
func commandTree(t *testing.T, bin string) map[string]helpPage {
	t.Helper()
	return commandTreeAt(t, bin, nil)
}

// commandTreeAt is commandTree from the command at start down.
func commandTreeAt(t *testing.T, bin string, start []string) map[string]helpPage {
	t.Helper()
	tree := map[string]helpPage{}
	var walk func(path []string)
	walk = func(path []string) {
		r := invoke(t, bin, append(slices.Clone(path), "--help")...)
		if r.err != nil || r.code != 0 {
			t.Fatalf("%s %s --help: exit %d, %v\n%s", bin, strings.Join(path, " "), r.code, r.err, r.stderr)
		}
		page := parseHelp(r.stdout)
		tree[strings.Join(path, " ")] = page
		for _, c := range page.commands {
			if c != "help" {
				walk(append(slices.Clone(path), c))
			}
		}
	}
	walk(start)
	return tree
}

// TestCommandLine checks that every command of upstream kubeadm exists in
// ours and accepts every flag upstream's does, with the same shorthand,
// type and default: a script written for upstream runs unchanged. Hidden
// commands and flags are compared too (found by probing, hidden_test.go):
// both must accept them, and a flag must take a value in both or in
// neither. Commands and flags only we have (etcd snapshots, some phases
// accepting more of their parent's flags) are allowed and listed in the
// log.
func TestCommandLine(t *testing.T) {
	requireSetup(t)
	visibleUp := commandTree(t, upstreamBin)
	if len(visibleUp) < 100 {
		t.Fatalf("only %d upstream commands found: is the help parsed right?", len(visibleUp))
	}
	decl := ourDeclaredTree()
	up, upHidden := fullTree(t, upstreamBin, visibleUp, decl)
	ours, oursHidden := fullTree(t, oursBin, visibleUp, decl)
	var problems, extras, hiddenSeen []string
	for _, path := range slices.Sorted(maps.Keys(up)) {
		name := "kubeadm " + path
		if upHidden[path] {
			hiddenSeen = append(hiddenSeen, name)
		}
		o, ok := ours[path]
		if !ok {
			problems = append(problems, name+": no such command")
			continue
		}
		for _, flag := range slices.Sorted(maps.Keys(up[path].flags)) {
			want := up[path].flags[flag]
			if want.hidden {
				hiddenSeen = append(hiddenSeen, name+" --"+flag)
			}
			got, ok := o.flags[flag]
			switch {
			case !ok:
				problems = append(problems, name+": no --"+flag)
			case want.hidden || got.hidden:
				// A hidden flag is known by its kind alone.
				if kindOf(got) != kindOf(want) {
					problems = append(problems, name+": --"+flag+" is "+kindOf(got)+", upstream's "+kindOf(want))
				}
			case got != want:
				problems = append(problems, name+": --"+flag+" is "+describe(got)+", upstream's "+describe(want))
			}
		}
		for _, flag := range slices.Sorted(maps.Keys(o.flags)) {
			if _, ok := up[path].flags[flag]; !ok {
				extras = append(extras, name+" --"+flag)
			}
		}
		for _, flag := range upstreamHidden[path] {
			if f, ok := up[path].flags[flag]; !ok || !f.hidden {
				problems = append(problems, "test data: upstream has no hidden --"+flag+" on "+name)
			}
		}
	}
	for path, flags := range upstreamHidden {
		if _, ok := up[path]; !ok && flags == nil {
			problems = append(problems, "test data: upstream has no hidden command kubeadm "+path)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(ours)) {
		if _, ok := up[path]; !ok {
			extras = append(extras, "kubeadm "+path)
		}
	}
	// A group run without its sub-command, or with an unknown one, fails
	// (or not) as upstream's does. Commands that run a workflow of their
	// own (those with a "phase" sub-command: init, join, reset, upgrade
	// apply and node) are not groups, and are not run here. A command
	// that neither runs nor has sub-commands (an empty group: alpha) is
	// run too.
	for _, path := range slices.Sorted(maps.Keys(up)) {
		empty := len(up[path].commands) == 0 && !up[path].usage
		if path == "" || !empty && (len(up[path].commands) == 0 || slices.Contains(up[path].commands, "phase")) {
			continue
		}
		for _, extra := range []string{"", "nosuch"} {
			args := strings.Fields(path + " " + extra)
			o, u := pair(t, args...)
			if o.code != u.code {
				problems = append(problems, fmt.Sprintf("kubeadm %s: exit code %d, upstream's %d", strings.Join(args, " "), o.code, u.code))
			}
		}
	}
	t.Logf("%d commands compared (%d hidden in ours); hidden in upstream: %s", len(up), len(oursHidden), strings.Join(hiddenSeen, ", "))
	t.Logf("only ours: %s", strings.Join(extras, ", "))
	if len(problems) > 0 {
		t.Errorf("the command line differs from upstream's:\n  %s", strings.Join(problems, "\n  "))
	}
}

func describe(f flagInfo) string {
	s := f.typ
	if f.shorthand != "" {
		s = "-" + f.shorthand + " " + s
	}
	if f.def != "" {
		s += " (default " + f.def + ")"
	}
	return s
}
