// Package workflow runs kubeadm's phased commands ("init", "join", "reset",
// "upgrade ...") from a declarative tree of phases.
//
// A command describes its work as a slice of Phase values; a Runner executes
// that tree and, through BindToCommand, turns it into a "phase" sub-command
// tree so that single steps can be run on their own, for example
// "kubeadm init phase certs apiserver". Both the phases and the runner are
// generic over the type T of the data shared between phases, so phase code
// receives its concrete data type without type assertions.
//
// # Lifecycle
//
// A run, whether of the whole workflow (Runner.Run) or of one generated phase
// command, goes through these steps:
//
//  1. The phase tree is checked (see Runner.Validate).
//  2. The names given with --skip-phases are checked; an unknown name is an
//     error and nothing is built or run.
//  3. The shared data is built by Runner.NewData. It is built at most once
//     per Runner: later runs and calls to Runner.Data reuse the first result
//     (including a failure). Nothing is built when cobra only prints help.
//  4. If --skip-phases was not given, Runner.SkipPhases may supply the skip
//     list from the data (kubeadm configuration files have a skipPhases
//     field). The flag, when given, wins over the data, as upstream kubeadm
//     documents. Names from the data are checked the same way.
//  5. Runner.Plan, when set, learns which phases the run reaches; then the
//     Prepare of every reached phase is called, in declaration order.
//  6. Phases run depth-first in declaration order: a phase's RunIf, then its
//     Run, then its sub-phases. A skipped phase, or one whose RunIf reports
//     false, is passed over together with all of its sub-phases.
//  7. Once the run has ended, successfully or not, the Finish of every
//     phase that step 5 reached is called, in reverse order, with the run's
//     error: a phase that started work ahead of its turn (see Prepare) can
//     undo it when the run failed before that turn.
//
// A generated phase command runs only the subtree of its phase: the Run and
// RunIf of the phase's ancestors are not called, but a skipped ancestor
// still skips it.
//
// # Names
//
// A phase is known by the first word of its Name (anything after a space is
// an argument description shown in the usage line only). A nested phase's
// path joins the names of its ancestors with "/", as in "certs/apiserver";
// paths are what --skip-phases and error messages use.
//
// # Errors
//
// The first error returned by a phase's Run or RunIf stops the run and is
// returned wrapped exactly once as "error execution phase <path>: <err>".
// The wrapping uses %w, so errors.Is and errors.As still reach the original
// error, including any exit-code carrying type it contains.
//
// # The "all" sub-command
//
// A phase with sub-phases does not get an implicit "all" command; a group
// opts in by listing a child with RunAllSiblings set (conventionally named
// "all"). That child has no Run of its own: its command runs the group as in
// the full workflow (the group's RunIf and Run, then each sub-phase), while
// its own Short, flags and argument rules stay under the author's control.
// Groups that upstream kubeadm gives no "all" (such as "init phase etcd")
// simply leave it out. Running a group's command directly prints its help.
package workflow
