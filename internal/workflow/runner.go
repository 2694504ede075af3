package workflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Runner executes a tree of phases sharing data of type T. Set its exported
// fields, then call BindToCommand once while building the command, and Run
// from that command's RunE. A Runner holds the state of one command
// invocation (the --skip-phases value and the built data) and is not safe
// for concurrent use.
//
// Phases always run, and print, in declaration order. Work a phase does
// ahead of its turn is declared with the hooks it has: Plan (which phases
// the run reaches), Prepare (start in the background) and Finish (undo when
// the run failed before the turn came). Init's kubelet head start is built
// on them rather than on a runner field of its own ("start this phase
// early"), because it is not one phase started early: it begins in the
// middle of another phase (right after certs/ca), does the work of two
// phases (kubeconfig/kubelet, then kubelet-start) in that order, holds back
// the certs and kubeconfig phases' key generation until it is done, and
// applies only on a fresh node. A generic field would carry all of that
// for one user; initphases' kubeletHeadStart keeps it in one place,
// buffers what it prints and has each phase print it at its own turn, so
// the output is that of the phases run in order.
type Runner[T any] struct {
	// Phases is the workflow, run in order.
	Phases []Phase[T]

	// NewData builds the data shared by the phases. It is called lazily, at
	// most once per Runner, with the command being executed (the bound
	// command for a full run, the generated sub-command for a single phase)
	// and its positional arguments. Its result, or its error, is kept and
	// returned to every later caller. When nil, phases get T's zero value.
	NewData func(cmd *cobra.Command, args []string) (T, error)

	// SkipPhases, when set, supplies phase paths to skip from the built
	// data. It is consulted only when --skip-phases was not given.
	SkipPhases func(data T) []string

	// Plan, when set, is called once per run, after the skip list is known
	// and before any Prepare, with the data and a function that tells
	// whether the phase at a path will be reached by the run: it lies in
	// the part of the tree being run and neither it nor an ancestor is
	// skipped. (RunIf is not consulted: it is asked only when its turn
	// comes.) It lets the command decide how phases cooperate in this run.
	Plan func(data T, reached func(path string) bool)

	// AdditionalFlags holds flags that phases may list in InheritFlags but
	// that the bound command itself does not accept.
	AdditionalFlags *pflag.FlagSet

	cmd      *cobra.Command // set by BindToCommand
	skipFlag []string       // value of --skip-phases

	dataBuilt bool
	data      T
	dataErr   error
}

// Validate reports whether the phase tree is well formed: every phase has a
// name without "/", sibling names are unique, and RunAllSiblings is only set
// on a sub-phase without Run, RunIf or sub-phases, at most once per group.
func (r *Runner[T]) Validate() error {
	_, err := buildTree(r.Phases, nil)
	return err
}

// PhaseNames lists, in run order, the paths that --skip-phases accepts.
func (r *Runner[T]) PhaseNames() ([]string, error) {
	roots, err := buildTree(r.Phases, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	walkNodes(roots, func(n *node[T]) { names = append(names, n.path) })
	return names, nil
}

// Data returns the shared data, building it with the bound command (nil
// before BindToCommand) and args if that has not happened yet.
func (r *Runner[T]) Data(args []string) (T, error) {
	return r.buildData(r.cmd, args)
}

// Run executes the whole workflow with the bound command (nil before
// BindToCommand) and args, following the lifecycle described in the package
// documentation.
func (r *Runner[T]) Run(ctx context.Context, args []string) error {
	return r.run(ctx, r.cmd, args, "")
}

func (r *Runner[T]) buildData(cmd *cobra.Command, args []string) (T, error) {
	if !r.dataBuilt {
		r.dataBuilt = true
		if r.NewData != nil {
			r.data, r.dataErr = r.NewData(cmd, args)
		}
	}
	return r.data, r.dataErr
}

// run executes the subtree rooted at the phase with path target, or the
// whole tree when target is empty.
func (r *Runner[T]) run(ctx context.Context, cmd *cobra.Command, args []string, target string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	roots, err := buildTree(r.Phases, nil)
	if err != nil {
		return err
	}
	start := roots
	if target != "" {
		n := findPath(roots, target)
		if n == nil {
			return fmt.Errorf("phase %q is no longer part of the workflow", target)
		}
		start = []*node[T]{n}
	}

	skip, err := checkSkipList(roots, r.skipFlag)
	if err != nil {
		return err
	}
	data, err := r.buildData(cmd, args)
	if err != nil {
		return err
	}
	if len(skip) == 0 && r.SkipPhases != nil {
		if skip, err = checkSkipList(roots, r.SkipPhases(data)); err != nil {
			return err
		}
	}

	if target != "" {
		// Running one phase: a skipped ancestor skips it too.
		for n := start[0].parent; n != nil; n = n.parent {
			if skip[n.path] {
				return nil
			}
		}
	}
	if r.Plan != nil {
		reached := map[string]bool{}
		markReached(start, skip, reached)
		r.Plan(data, func(path string) bool { return reached[path] })
	}
	prepareNodes(ctx, start, data, skip)
	err = r.runNodes(ctx, start, data, skip)
	finishNodes(ctx, start, data, skip, err)
	return err
}

// markReached adds to reached the paths of nodes and their descendants
// that a run of nodes reaches, given the skip list.
func markReached[T any](nodes []*node[T], skip, reached map[string]bool) {
	for _, n := range nodes {
		if n.phase.RunAllSiblings || skip[n.path] {
			continue
		}
		reached[n.path] = true
		markReached(n.children, skip, reached)
	}
}

// prepareNodes calls Prepare of every phase among nodes and their
// descendants that the run will reach, in workflow order.
func prepareNodes[T any](ctx context.Context, nodes []*node[T], data T, skip map[string]bool) {
	for _, n := range nodes {
		if n.phase.RunAllSiblings || skip[n.path] {
			continue
		}
		if n.phase.Prepare != nil {
			n.phase.Prepare(ctx, data)
		}
		prepareNodes(ctx, n.children, data, skip)
	}
}

// finishNodes calls Finish of every phase among nodes and their
// descendants that prepareNodes reached, in reverse workflow order, with
// the run's error.
func finishNodes[T any](ctx context.Context, nodes []*node[T], data T, skip map[string]bool, err error) {
	for _, n := range slices.Backward(nodes) {
		if n.phase.RunAllSiblings || skip[n.path] {
			continue
		}
		finishNodes(ctx, n.children, data, skip, err)
		if n.phase.Finish != nil {
			n.phase.Finish(ctx, data, err)
		}
	}
}

func (r *Runner[T]) runNodes(ctx context.Context, nodes []*node[T], data T, skip map[string]bool) error {
	for _, n := range nodes {
		if n.phase.RunAllSiblings || skip[n.path] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return phaseError(n, err)
		}
		if n.phase.RunIf != nil {
			ok, err := n.phase.RunIf(data)
			if err != nil {
				return phaseError(n, err)
			}
			if !ok {
				continue
			}
		}
		if n.phase.Run != nil {
			if err := n.phase.Run(ctx, data); err != nil {
				return phaseError(n, err)
			}
		}
		if err := r.runNodes(ctx, n.children, data, skip); err != nil {
			return err
		}
	}
	return nil
}

func phaseError[T any](n *node[T], err error) error {
	return fmt.Errorf("error execution phase %s: %w", n.path, err)
}

func findPath[T any](roots []*node[T], path string) *node[T] {
	var found *node[T]
	walkNodes(roots, func(n *node[T]) {
		if found == nil && n.path == path {
			found = n
		}
	})
	return found
}

// checkSkipList turns names into a set, failing on names that are not phase
// paths. Surrounding spaces and empty entries are ignored.
func checkSkipList[T any](roots []*node[T], names []string) (map[string]bool, error) {
	skip := make(map[string]bool, len(names))
	var unknown []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if findPath(roots, name) == nil {
			unknown = append(unknown, fmt.Sprintf("%q", name))
			continue
		}
		skip[name] = true
	}
	if len(unknown) == 0 {
		return skip, nil
	}
	// List what help shows: hidden phases and the RunAllSiblings markers
	// are accepted but not advertised.
	var known []string
	var collect func(nodes []*node[T])
	collect = func(nodes []*node[T]) {
		for _, n := range nodes {
			if n.phase.Hidden || n.phase.RunAllSiblings {
				continue
			}
			known = append(known, n.path)
			collect(n.children)
		}
	}
	collect(roots)
	subject := "phase " + unknown[0] + " does not exist"
	if len(unknown) > 1 {
		subject = "phases " + strings.Join(unknown, ", ") + " do not exist"
	}
	return nil, fmt.Errorf("cannot skip: %s; the known phases are: %s", subject, strings.Join(known, ", "))
}
