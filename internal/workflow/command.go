package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// SkipPhasesFlag is the name of the flag BindToCommand adds.
const SkipPhasesFlag = "skip-phases"

// BindToCommand wires the workflow into cmd. Call it once, after cmd's own
// flags are defined (so phases can inherit them). It
//
//   - remembers cmd as the command Run and Data pass to NewData;
//   - adds the --skip-phases flag to cmd;
//   - adds a "phase" sub-command holding one sub-command per phase, nested
//     like the phases, each with the phase's name, aliases, help texts,
//     hidden state, inherited and local flags and argument rules;
//   - appends to cmd.Long a section listing the phases as a tree.
//
// Running a generated command for a phase without sub-phases runs that phase
// alone; for a RunAllSiblings phase it runs the parent group as a whole; for
// a phase with sub-phases it prints that command's help. Each such run goes
// through the same lifecycle as Run, with the generated command passed to
// NewData.
//
// BindToCommand panics if the phase tree is invalid (see Validate) or if a
// phase asks to inherit a flag that neither cmd nor AdditionalFlags defines:
// both are mistakes in the program, not in its input.
func (r *Runner[T]) BindToCommand(cmd *cobra.Command) {
	roots, err := buildTree(r.Phases, nil)
	if err != nil {
		panic(fmt.Sprintf("workflow of %q: %v", cmd.Name(), err))
	}
	r.cmd = cmd

	phaseCmd := &cobra.Command{
		Use:   "phase",
		Short: fmt.Sprintf("Run a single phase of the %q workflow", cmd.Name()),
		Long: fmt.Sprintf("Run a single phase of the %q workflow, or a group of them.\n\n"+
			"Pick the phase with the sub-commands below; phases that contain other phases\n"+
			"list theirs in their own help.", cmd.Name()),
		Args: cobra.NoArgs,
		RunE: RequireSubcommand,
	}
	for _, n := range roots {
		if !n.phase.Hidden {
			phaseCmd.AddCommand(r.newPhaseCommand(cmd, n))
		}
	}
	cmd.AddCommand(phaseCmd)

	cmd.Flags().StringSliceVar(&r.skipFlag, SkipPhasesFlag, nil, "List of phases to be skipped")

	section := phaseList(cmd.Name(), roots)
	switch {
	case cmd.Long != "":
		cmd.Long = strings.TrimRight(cmd.Long, "\n") + "\n\n" + section
	case cmd.Short != "":
		cmd.Long = cmd.Short + "\n\n" + section
	default:
		cmd.Long = section
	}
}

func (r *Runner[T]) newPhaseCommand(bound *cobra.Command, n *node[T]) *cobra.Command {
	p := n.phase
	c := &cobra.Command{
		Use:     p.Name,
		Aliases: p.Aliases,
		Short:   p.Short,
		Long:    p.Long,
		Example: p.Example,
	}
	if len(n.children) > 0 {
		c.Args = cobra.NoArgs
		if p.ArgsValidator != nil {
			c.Args = p.ArgsValidator
		}
		c.RunE = RequireSubcommand
	} else {
		c.Args = bound.Args
		if p.ArgsValidator != nil {
			c.Args = p.ArgsValidator
		}
		target := n.path
		if p.RunAllSiblings {
			target = n.parent.path
		}
		c.RunE = func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return r.run(ctx, c, args, target)
		}
	}

	for _, name := range p.InheritFlags {
		f, persistent := r.lookupInherited(bound, name)
		if f == nil {
			panic(fmt.Sprintf("workflow of %q: phase %q inherits flag --%s, which %q does not define",
				bound.Name(), n.path, name, bound.Name()))
		}
		if !persistent && c.Flags().Lookup(f.Name) == nil {
			c.Flags().AddFlag(f)
		}
	}
	if p.LocalFlags != nil {
		c.Flags().AddFlagSet(p.LocalFlags)
	}

	for _, child := range n.children {
		if !child.phase.Hidden {
			c.AddCommand(r.newPhaseCommand(bound, child))
		}
	}
	return c
}

// lookupInherited finds the flag name among bound's flags, the persistent
// flags of bound and its ancestors, and AdditionalFlags. persistent reports
// a persistent flag, which cobra already hands down to sub-commands.
func (r *Runner[T]) lookupInherited(bound *cobra.Command, name string) (f *pflag.Flag, persistent bool) {
	for c := bound; c != nil; c = c.Parent() {
		if f := c.PersistentFlags().Lookup(name); f != nil {
			return f, true
		}
	}
	if f := bound.Flags().Lookup(name); f != nil {
		return f, false
	}
	if r.AdditionalFlags != nil {
		if f := r.AdditionalFlags.Lookup(name); f != nil {
			return f, false
		}
	}
	return nil, false
}

// phaseList renders the help section listing the visible phases of the
// workflow of the command called name.
func phaseList[T any](name string, roots []*node[T]) string {
	type row struct{ label, short string }
	var rows []row
	var collect func(nodes []*node[T], depth int)
	collect = func(nodes []*node[T], depth int) {
		for _, n := range nodes {
			if n.phase.Hidden || n.phase.RunAllSiblings {
				continue
			}
			label := n.name
			if depth > 0 {
				label = strings.Repeat("  ", depth) + "/" + n.name
			}
			rows = append(rows, row{label, n.phase.Short})
			collect(n.children, depth+1)
		}
	}
	collect(roots, 0)

	width := 0
	for _, r := range rows {
		width = max(width, len(r.label))
	}
	const gap = 4

	var b strings.Builder
	fmt.Fprintf(&b, "The %q workflow runs these phases:\n```\n", name)
	for _, r := range rows {
		if r.short == "" {
			b.WriteString(r.label + "\n")
			continue
		}
		fmt.Fprintf(&b, "%-*s%s\n", width+gap, r.label, r.short)
	}
	b.WriteString("```")
	return b.String()
}

// RequireSubcommand is the RunE of a command that only groups others, run
// without one: it prints the command's help and fails, as upstream
// kubeadm's group commands do, so a script missing its sub-command notices.
// With NoArgs, an unknown sub-command fails as such before it is called.
func RequireSubcommand(cmd *cobra.Command, _ []string) error {
	if err := cmd.Help(); err != nil {
		return err
	}
	return errors.New("subcommand is required")
}
