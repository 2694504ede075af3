package workflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Phase is one step of a workflow, or a group of steps. Phases are plain
// data: a command declares its workflow as a []Phase[T] and hands it to a
// Runner.
type Phase[T any] struct {
	// Name identifies the phase among its siblings and names its generated
	// sub-command. Only the first word counts as the name; the rest, if any,
	// describes positional arguments for the usage line, as in
	// "preflight [api-server-endpoint]". The name must not contain "/".
	Name string

	// Aliases are other names accepted for the generated sub-command. They
	// are not accepted by --skip-phases.
	Aliases []string

	// Short is the one-line description shown in help listings, Long the
	// full description of the generated sub-command and Example its usage
	// examples.
	Short   string
	Long    string
	Example string

	// Hidden leaves the phase (and its sub-phases) out of every help
	// listing and gives it no "phase" sub-command, as upstream's hidden
	// phases have none. A hidden phase still runs in the workflow (and in
	// its group's "all") and can still be skipped.
	Hidden bool

	// Phases are the sub-phases, run in order after this phase's own Run.
	Phases []Phase[T]

	// RunAllSiblings marks a child whose generated command runs its parent
	// group as a whole: the parent's RunIf and Run followed by every other
	// sub-phase. Such a child must not have Run, RunIf or Phases, plays no
	// part in a full run and is not listed in the workflow's help. A group
	// has at most one such child, conventionally named "all".
	RunAllSiblings bool

	// Run does the phase's work. It may be nil for a pure group.
	Run func(ctx context.Context, data T) error

	// Prepare, when set, is called before the first phase of a run starts,
	// for every phase the run will reach (not skipped, in or under the
	// phase run). It may start slow work in the background whose result
	// Run takes later, such as generating keys while the phases before it
	// run. It must not change anything outside the process: the run may
	// still fail before this phase. RunIf is not consulted first.
	Prepare func(ctx context.Context, data T)

	// Finish, when set, is called once the run has ended, for every phase
	// whose Prepare the run would call (whether or not it has one), in
	// reverse declaration order, with the run's error (nil on success). It
	// lets a phase undo what it started ahead of its turn when the run
	// fails before that turn comes.
	Finish func(ctx context.Context, data T, err error)

	// RunIf, when set, is asked before the phase runs. When it reports
	// false the phase and all of its sub-phases are passed over.
	RunIf func(data T) (bool, error)

	// InheritFlags names flags of the command passed to BindToCommand (or
	// of Runner.AdditionalFlags) that the generated sub-command accepts too.
	// The flag itself is shared, so both commands fill the same variable.
	// Persistent flags reach sub-commands anyway and need not be listed.
	InheritFlags []string

	// LocalFlags are extra flags accepted only by the generated sub-command.
	LocalFlags *pflag.FlagSet

	// ArgsValidator checks the positional arguments of the generated
	// sub-command. When nil, a leaf phase uses the Args of the command
	// passed to BindToCommand; commands of phases with sub-phases accept no
	// arguments.
	ArgsValidator cobra.PositionalArgs
}

// node is a phase placed in the tree, with its computed name and path.
type node[T any] struct {
	phase    *Phase[T]
	name     string // first word of phase.Name
	path     string // names from the root, joined by "/"
	parent   *node[T]
	children []*node[T]
}

// buildTree checks phases and arranges them as nodes.
func buildTree[T any](phases []Phase[T], parent *node[T]) ([]*node[T], error) {
	nodes := make([]*node[T], 0, len(phases))
	seen := make(map[string]bool, len(phases))
	allChild := ""
	for i := range phases {
		p := &phases[i]
		fields := strings.Fields(p.Name)
		if len(fields) == 0 {
			where := "the workflow"
			if parent != nil {
				where = fmt.Sprintf("phase %q", parent.path)
			}
			return nil, fmt.Errorf("phase number %d of %s has no name", i+1, where)
		}
		n := &node[T]{phase: p, name: fields[0], path: fields[0], parent: parent}
		if parent != nil {
			n.path = parent.path + "/" + n.name
		}
		if strings.Contains(n.name, "/") {
			return nil, fmt.Errorf("phase %q: a phase name must not contain %q", n.path, "/")
		}
		if seen[n.name] {
			return nil, fmt.Errorf("phase %q is declared more than once", n.path)
		}
		seen[n.name] = true
		if p.RunAllSiblings {
			switch {
			case parent == nil:
				return nil, fmt.Errorf("phase %q runs all its siblings, which only a sub-phase may do", n.path)
			case p.Run != nil || p.RunIf != nil || p.Prepare != nil || len(p.Phases) > 0:
				return nil, fmt.Errorf("phase %q runs all its siblings and so must not have Run, RunIf, Prepare or sub-phases", n.path)
			case allChild != "":
				return nil, fmt.Errorf("phases %q and %q both run all their siblings; a group may have only one such phase", allChild, n.path)
			}
			allChild = n.path
		}
		children, err := buildTree(p.Phases, n)
		if err != nil {
			return nil, err
		}
		n.children = children
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// walkNodes calls fn for every node of the tree in run order.
func walkNodes[T any](nodes []*node[T], fn func(*node[T])) {
	for _, n := range nodes {
		fn(n)
		walkNodes(n.children, fn)
	}
}

// RunTree runs phase p outside a Runner, as a full run would: Prepare of
// every phase it will reach, then its RunIf, its Run, then its sub-phases
// in order (those named in only, when only is not empty, at the first
// level). Commands use it to run the phases of another workflow on a view
// of their own data.
func RunTree[T any](ctx context.Context, p Phase[T], data T, only []string) error {
	prepareTree(ctx, p, data, only)
	err := runTree(ctx, p, data, only)
	finishTree(ctx, p, data, only, err)
	return err
}

// finishTree calls Finish of p and the phases under it that prepareTree
// prepared, the last first.
func finishTree[T any](ctx context.Context, p Phase[T], data T, only []string, err error) {
	for _, child := range slices.Backward(p.Phases) {
		if !child.RunAllSiblings && (len(only) == 0 || slices.Contains(only, child.Name)) {
			finishTree(ctx, child, data, nil, err)
		}
	}
	if p.Finish != nil {
		p.Finish(ctx, data, err)
	}
}

func prepareTree[T any](ctx context.Context, p Phase[T], data T, only []string) {
	if p.Prepare != nil {
		p.Prepare(ctx, data)
	}
	for _, child := range p.Phases {
		if !child.RunAllSiblings && (len(only) == 0 || slices.Contains(only, child.Name)) {
			prepareTree(ctx, child, data, nil)
		}
	}
}

func runTree[T any](ctx context.Context, p Phase[T], data T, only []string) error {
	if p.RunIf != nil {
		ok, err := p.RunIf(data)
		if err != nil || !ok {
			return err
		}
	}
	if p.Run != nil {
		if err := p.Run(ctx, data); err != nil {
			return err
		}
	}
	for _, child := range p.Phases {
		if child.RunAllSiblings || (len(only) > 0 && !slices.Contains(only, child.Name)) {
			continue
		}
		if err := runTree(ctx, child, data, nil); err != nil {
			return err
		}
	}
	return nil
}
