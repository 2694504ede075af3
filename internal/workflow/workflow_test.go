package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

// testData is the shared data of the test workflow.
type testData struct {
	config   string
	certDir  string
	noAddons bool
	noProxy  bool
	skip     []string
}

// fixture is a "kubeadm init"-like command tree driven by a test workflow.
// The fields above the blank line steer the run; the rest record it.
type fixture struct {
	noAddons bool     // addon's RunIf reports false
	noProxy  bool     // addon/kube-proxy's RunIf reports false
	dataSkip []string // what Runner.SkipPhases returns
	failAt   string   // path of the phase whose Run fails with failErr
	failErr  error
	runIfErr error // returned by addon's RunIf
	dataErr  error // returned by NewData

	root, init *cobra.Command
	runner     *Runner[*testData]
	out        bytes.Buffer

	configPath, certDir, token string
	kubeconfig                 string
	noProxyFlag                bool

	events   []string
	builds   int
	dataCmd  string   // name of the command NewData was given
	dataArgs []string // args NewData was given
}

func (f *fixture) record(path string) func(context.Context, *testData) error {
	return func(_ context.Context, d *testData) error {
		if d == nil {
			return errors.New("nil data")
		}
		f.events = append(f.events, path)
		if path == f.failAt {
			return f.failErr
		}
		return nil
	}
}

func (f *fixture) phases() []Phase[*testData] {
	extra := pflag.NewFlagSet("apiserver", pflag.ContinueOnError)
	extra.StringSlice("extra-san", nil, "Extra names for the certificate")
	return []Phase[*testData]{
		{
			Name:         "preflight [api-server-endpoint]",
			Short:        "Check that the machine is ready",
			Run:          f.record("preflight"),
			InheritFlags: []string{"config", "rootfs"},
		},
		{
			Name:  "certs",
			Short: "Create the certificates",
			Run:   f.record("certs"),
			Phases: []Phase[*testData]{
				{Name: "all", Short: "Create every certificate", RunAllSiblings: true, InheritFlags: []string{"config", "cert-dir"}},
				{Name: "ca", Short: "Create the CA", Run: f.record("certs/ca"), InheritFlags: []string{"cert-dir"}},
				{Name: "apiserver", Aliases: []string{"api"}, Short: "Create the API server certificate", Run: f.record("certs/apiserver"), LocalFlags: extra},
				{Name: "legacy", Short: "An old certificate", Hidden: true, Run: f.record("certs/legacy")},
			},
		},
		{
			Name:  "etcd",
			Short: "Set up etcd",
			Phases: []Phase[*testData]{
				{Name: "local", Short: "Write the local etcd manifest", Run: f.record("etcd/local"), InheritFlags: []string{"kubeconfig"}},
			},
		},
		{
			Name:  "addon",
			Short: "Install the add-ons",
			RunIf: func(d *testData) (bool, error) { return !d.noAddons, f.runIfErr },
			Phases: []Phase[*testData]{
				{Name: "all", Short: "Install every add-on", RunAllSiblings: true, InheritFlags: []string{"no-proxy"}},
				{Name: "coredns", Short: "Install CoreDNS", Run: f.record("addon/coredns")},
				{
					Name:         "kube-proxy",
					Short:        "Install kube-proxy",
					RunIf:        func(d *testData) (bool, error) { return !d.noProxy, nil },
					Run:          f.record("addon/kube-proxy"),
					InheritFlags: []string{"no-proxy"},
				},
			},
		},
		{Name: "secret", Short: "Not for everyone", Hidden: true, Run: f.record("secret")},
	}
}

func newFixture(t *testing.T, setup ...func(*fixture)) *fixture {
	t.Helper()
	f := &fixture{}
	for _, s := range setup {
		s(f)
	}
	f.runner = &Runner[*testData]{
		Phases: f.phases(),
		NewData: func(cmd *cobra.Command, args []string) (*testData, error) {
			f.builds++
			f.dataCmd = cmd.Name()
			f.dataArgs = args
			if f.dataErr != nil {
				return nil, f.dataErr
			}
			return &testData{
				config:   f.configPath,
				certDir:  f.certDir,
				noAddons: f.noAddons,
				noProxy:  f.noProxy || f.noProxyFlag,
				skip:     f.dataSkip,
			}, nil
		},
		SkipPhases:      func(d *testData) []string { return d.skip },
		AdditionalFlags: pflag.NewFlagSet("additional", pflag.ContinueOnError),
	}
	f.runner.AdditionalFlags.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file")

	f.root = &cobra.Command{Use: "kubeadm", SilenceErrors: true, SilenceUsage: true}
	f.root.PersistentFlags().String("rootfs", "", "Path to the host's root filesystem")
	f.init = &cobra.Command{
		Use:   "init",
		Short: "Set up a control-plane node",
		Long:  "Set up a control-plane node.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.runner.Run(cmd.Context(), args)
		},
	}
	f.init.Flags().StringVar(&f.configPath, "config", "", "Path to a configuration file")
	f.init.Flags().StringVar(&f.certDir, "cert-dir", "/etc/kubernetes/pki", "Where certificates go")
	f.init.Flags().StringVar(&f.token, "token", "", "A bootstrap token")
	f.init.Flags().BoolVar(&f.noProxyFlag, "no-proxy", false, "Do not install kube-proxy")
	f.root.AddCommand(f.init)
	f.runner.BindToCommand(f.init)
	f.root.SetOut(&f.out)
	f.root.SetErr(&f.out)
	return f
}

func (f *fixture) execute(ctx context.Context, args ...string) error {
	f.root.SetArgs(args)
	return f.root.ExecuteContext(ctx)
}

var fullRun = []string{
	"preflight", "certs", "certs/ca", "certs/apiserver", "certs/legacy",
	"etcd/local", "addon/coredns", "addon/kube-proxy", "secret",
}

func without(drop ...string) []string {
	var out []string
	for _, e := range fullRun {
		keep := true
		for _, d := range drop {
			if e == d || strings.HasPrefix(e, d+"/") {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

func TestRunOrderAndSkipping(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*fixture)
		args  []string
		want  []string
	}{
		{name: "everything in order", want: fullRun},
		{name: "skip a leaf", args: []string{"--skip-phases", "certs/apiserver"}, want: without("certs/apiserver")},
		{name: "skip a parent skips its children", args: []string{"--skip-phases", "certs"}, want: without("certs")},
		{name: "skip a group without Run", args: []string{"--skip-phases=etcd"}, want: without("etcd")},
		{name: "comma list with spaces", args: []string{"--skip-phases=preflight, addon/coredns"}, want: without("preflight", "addon/coredns")},
		{name: "repeated flag", args: []string{"--skip-phases=preflight", "--skip-phases=secret"}, want: without("preflight", "secret")},
		{name: "skipping an all marker does nothing", args: []string{"--skip-phases=certs/all"}, want: fullRun},
		{name: "RunIf false skips the phase and its children", setup: func(f *fixture) { f.noAddons = true }, want: without("addon")},
		{name: "RunIf false on a leaf", setup: func(f *fixture) { f.noProxy = true }, want: without("addon/kube-proxy")},
		{name: "skip list from data", setup: func(f *fixture) { f.dataSkip = []string{"etcd", "certs/ca"} }, want: without("etcd", "certs/ca")},
		{
			name:  "flag wins over data",
			setup: func(f *fixture) { f.dataSkip = []string{"etcd"} },
			args:  []string{"--skip-phases=preflight"},
			want:  without("preflight"),
		},
		{name: "positional argument reaches NewData", args: []string{"10.0.0.1:6443"}, want: fullRun},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var setup []func(*fixture)
			if tc.setup != nil {
				setup = append(setup, tc.setup)
			}
			f := newFixture(t, setup...)
			if err := f.execute(context.Background(), append([]string{"init"}, tc.args...)...); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(f.events, tc.want) {
				t.Errorf("ran %v, want %v", f.events, tc.want)
			}
			if f.builds != 1 {
				t.Errorf("NewData called %d times, want 1", f.builds)
			}
			if f.dataCmd != "init" {
				t.Errorf("NewData got command %q, want init", f.dataCmd)
			}
		})
	}
}

func TestUnknownSkipPhase(t *testing.T) {
	const known = "the known phases are: preflight, certs, certs/ca, certs/apiserver, etcd, etcd/local, addon, addon/coredns, addon/kube-proxy"
	tests := []struct {
		name       string
		setup      func(*fixture)
		args       []string
		wantErr    string
		wantBuilds int
	}{
		{
			name:    "one unknown name from the flag",
			args:    []string{"--skip-phases", "certs/bogus"},
			wantErr: `phase "certs/bogus" does not exist; ` + known,
		},
		{
			name:    "several unknown names",
			args:    []string{"--skip-phases", "preflight,foo,addon/bar"},
			wantErr: `phases "foo", "addon/bar" do not exist; ` + known,
		},
		{
			name:    "aliases are not phase names",
			args:    []string{"--skip-phases", "certs/api"},
			wantErr: `phase "certs/api" does not exist`,
		},
		{
			name:       "unknown name from data",
			setup:      func(f *fixture) { f.dataSkip = []string{"nope"} },
			wantErr:    `phase "nope" does not exist`,
			wantBuilds: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var setup []func(*fixture)
			if tc.setup != nil {
				setup = append(setup, tc.setup)
			}
			f := newFixture(t, setup...)
			err := f.execute(context.Background(), append([]string{"init"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			if len(f.events) != 0 {
				t.Errorf("phases ran despite the error: %v", f.events)
			}
			if f.builds != tc.wantBuilds {
				t.Errorf("NewData called %d times, want %d", f.builds, tc.wantBuilds)
			}
		})
	}
}

func TestHiddenPhasesCanBeSkipped(t *testing.T) {
	f := newFixture(t)
	if err := f.execute(context.Background(), "init", "--skip-phases=secret,certs/legacy"); err != nil {
		t.Fatal(err)
	}
	if want := without("secret", "certs/legacy"); !reflect.DeepEqual(f.events, want) {
		t.Errorf("ran %v, want %v", f.events, want)
	}
}

func TestDataBuiltOnce(t *testing.T) {
	f := newFixture(t)
	d1, err := f.runner.Data([]string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	d2, _ := f.runner.Data(nil)
	if f.builds != 1 {
		t.Errorf("NewData called %d times, want 1", f.builds)
	}
	if d1 != d2 {
		t.Error("Data returned a different value the second time")
	}
	if !reflect.DeepEqual(f.dataArgs, []string{"x"}) {
		t.Errorf("NewData got args %v, want the first caller's [x]", f.dataArgs)
	}
	if len(f.events) != 2*len(fullRun) {
		t.Errorf("ran %d phases over two runs, want %d", len(f.events), 2*len(fullRun))
	}
}

func TestDataErrorIsKept(t *testing.T) {
	boom := errors.New("bad config")
	f := newFixture(t, func(f *fixture) { f.dataErr = boom })
	for i := 0; i < 2; i++ {
		if err := f.runner.Run(context.Background(), nil); !errors.Is(err, boom) {
			t.Fatalf("run %d: got %v, want %v", i, err, boom)
		}
	}
	if f.builds != 1 {
		t.Errorf("NewData called %d times, want 1", f.builds)
	}
	if len(f.events) != 0 {
		t.Errorf("phases ran without data: %v", f.events)
	}
}

func TestDataNotBuiltForHelp(t *testing.T) {
	for _, args := range [][]string{
		{"init", "--help"},
		{"init", "phase"},
		{"init", "phase", "--help"},
		{"init", "phase", "certs"},
		{"init", "phase", "certs", "--help"},
		{"init", "phase", "certs", "ca", "--help"},
		{"init", "phase", "certs", "all", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f := newFixture(t)
			err := f.execute(context.Background(), args...)
			// A group without a sub-command prints its help and fails.
			if group := args[len(args)-1] == "phase" || args[len(args)-1] == "certs"; group != (err != nil) {
				t.Fatalf("error %v for a group command: %v", err, group)
			}
			if f.builds != 0 || len(f.events) != 0 {
				t.Errorf("built data %d times and ran %v; want neither", f.builds, f.events)
			}
			if !strings.Contains(f.out.String(), "Usage:") {
				t.Errorf("no help printed:\n%s", f.out.String())
			}
		})
	}
}

func TestNoDataInitializer(t *testing.T) {
	var got []string
	r := &Runner[int]{Phases: []Phase[int]{
		{Name: "a", Run: func(_ context.Context, d int) error { got = append(got, fmt.Sprint("a", d)); return nil }},
	}}
	if err := r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"a0"}) {
		t.Errorf("got %v, want [a0]", got)
	}
}

// codedError stands for an error type callers look for with errors.As.
type codedError struct{ code int }

func (e *codedError) Error() string { return fmt.Sprintf("failed with code %d", e.code) }

func TestErrorWrapping(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(*fixture)
		args     []string
		wantMsg  string
		wantRan  []string
		wantCode int
	}{
		{
			name:     "nested phase",
			setup:    func(f *fixture) { f.failAt, f.failErr = "certs/ca", &codedError{code: 7} },
			args:     []string{"init"},
			wantMsg:  "error execution phase certs/ca: failed with code 7",
			wantRan:  []string{"preflight", "certs", "certs/ca"},
			wantCode: exitcode.Generic,
		},
		{
			name:     "top-level phase keeps the exit code",
			setup:    func(f *fixture) { f.failAt, f.failErr = "preflight", exitcode.PreflightError(errors.New("swap is on")) },
			args:     []string{"init"},
			wantMsg:  "error execution phase preflight: swap is on",
			wantRan:  []string{"preflight"},
			wantCode: exitcode.Preflight,
		},
		{
			name:     "RunIf error",
			setup:    func(f *fixture) { f.runIfErr = &codedError{code: 3} },
			args:     []string{"init"},
			wantMsg:  "error execution phase addon: failed with code 3",
			wantRan:  without("addon", "secret"),
			wantCode: exitcode.Generic,
		},
		{
			name:     "single phase command",
			setup:    func(f *fixture) { f.failAt, f.failErr = "certs/apiserver", &codedError{code: 9} },
			args:     []string{"init", "phase", "certs", "all"},
			wantMsg:  "error execution phase certs/apiserver: failed with code 9",
			wantRan:  []string{"certs", "certs/ca", "certs/apiserver"},
			wantCode: exitcode.Generic,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.setup)
			err := f.execute(context.Background(), tc.args...)
			if err == nil {
				t.Fatal("expected an error")
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("message %q, want %q", err.Error(), tc.wantMsg)
			}
			if n := strings.Count(err.Error(), "error execution phase"); n != 1 {
				t.Errorf("error wrapped %d times, want once", n)
			}
			var ce *codedError
			if f.failErr != nil || f.runIfErr != nil {
				want := f.failErr
				if want == nil {
					want = f.runIfErr
				}
				if !errors.Is(err, want) {
					t.Error("errors.Is does not reach the phase's error")
				}
			}
			if _, isCoded := f.failErr.(*codedError); isCoded && !errors.As(err, &ce) {
				t.Error("errors.As does not reach the phase's error")
			}
			if got := exitcode.Of(err); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
			if !reflect.DeepEqual(f.events, tc.wantRan) {
				t.Errorf("ran %v, want %v", f.events, tc.wantRan)
			}
		})
	}
}

func TestCanceledContextStopsTheRun(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.runner.Phases[0].Run = func(context.Context, *testData) error {
		f.events = append(f.events, "preflight")
		cancel()
		return nil
	}
	err := f.execute(ctx, "init")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if want := "error execution phase certs: context canceled"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if !reflect.DeepEqual(f.events, []string{"preflight"}) {
		t.Errorf("ran %v, want only preflight", f.events)
	}
}

func TestPhaseCommands(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(*fixture)
		args     []string
		want     []string
		wantErr  string
		wantCmd  string
		wantArgs []string
	}{
		{name: "leaf", args: []string{"preflight"}, want: []string{"preflight"}, wantCmd: "preflight"},
		{
			name: "leaf with an argument", args: []string{"preflight", "10.0.0.1:6443"},
			want: []string{"preflight"}, wantCmd: "preflight", wantArgs: []string{"10.0.0.1:6443"},
		},
		{name: "leaf inherits the command's argument rule", args: []string{"preflight", "a", "b"}, wantErr: "accepts at most 1 arg"},
		{name: "nested leaf", args: []string{"certs", "apiserver"}, want: []string{"certs/apiserver"}, wantCmd: "apiserver"},
		{name: "alias", args: []string{"certs", "api"}, want: []string{"certs/apiserver"}, wantCmd: "apiserver"},
		// As upstream's: a hidden phase runs in the workflow only.
		{name: "hidden phase has no command", args: []string{"certs", "legacy"}, wantErr: `unknown command "legacy" for "kubeadm init phase certs"`},
		{name: "hidden top-level phase has no command", args: []string{"secret"}, wantErr: `unknown command "secret" for "kubeadm init phase"`},
		{name: "all runs the group", args: []string{"certs", "all"}, want: []string{"certs", "certs/ca", "certs/apiserver", "certs/legacy"}, wantCmd: "all"},
		{name: "group without all", args: []string{"etcd", "all"}, wantErr: `unknown command "all" for "kubeadm init phase etcd"`},
		{name: "group rejects unknown sub-phase", args: []string{"certs", "bogus"}, wantErr: `unknown command "bogus" for "kubeadm init phase certs"`},
		{name: "unknown phase", args: []string{"bogus"}, wantErr: `unknown command "bogus" for "kubeadm init phase"`},
		{name: "group alone prints help and fails", args: []string{"certs"}, wantErr: "subcommand is required"},
		{name: "all honors RunIf of the children", setup: func(f *fixture) { f.noProxy = true }, args: []string{"addon", "all"}, want: []string{"addon/coredns"}},
		{name: "all honors RunIf of the group", setup: func(f *fixture) { f.noAddons = true }, args: []string{"addon", "all"}, want: nil},
		{
			name: "single phase ignores RunIf of its ancestors", setup: func(f *fixture) { f.noAddons = true },
			args: []string{"addon", "kube-proxy"}, want: []string{"addon/kube-proxy"},
		},
		{name: "single phase honors its own RunIf", setup: func(f *fixture) { f.noProxy = true }, args: []string{"addon", "kube-proxy"}, want: nil},
		{name: "inherited flag reaches the data", args: []string{"addon", "kube-proxy", "--no-proxy"}, want: nil},
		{name: "data skip list applies", setup: func(f *fixture) { f.dataSkip = []string{"certs/ca"} }, args: []string{"certs", "all"}, want: []string{"certs", "certs/apiserver", "certs/legacy"}},
		{name: "data skip list applies to the phase itself", setup: func(f *fixture) { f.dataSkip = []string{"certs/ca"} }, args: []string{"certs", "ca"}, want: nil},
		{name: "skipped ancestor skips the phase", setup: func(f *fixture) { f.dataSkip = []string{"certs"} }, args: []string{"certs", "ca"}, want: nil},
		{name: "no skip-phases flag on phase commands", args: []string{"certs", "ca", "--skip-phases=certs"}, wantErr: "unknown flag: --skip-phases"},
		{name: "flag not inherited", args: []string{"certs", "ca", "--token=abc"}, wantErr: "unknown flag: --token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var setup []func(*fixture)
			if tc.setup != nil {
				setup = append(setup, tc.setup)
			}
			f := newFixture(t, setup...)
			err := f.execute(context.Background(), append([]string{"init", "phase"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				if f.builds != 0 {
					t.Errorf("NewData called %d times for a rejected command", f.builds)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(f.events, tc.want) {
				t.Errorf("ran %v, want %v", f.events, tc.want)
			}
			if tc.wantCmd != "" && f.dataCmd != tc.wantCmd {
				t.Errorf("NewData got command %q, want %q", f.dataCmd, tc.wantCmd)
			}
			if tc.wantArgs != nil && !reflect.DeepEqual(f.dataArgs, tc.wantArgs) {
				t.Errorf("NewData got args %v, want %v", f.dataArgs, tc.wantArgs)
			}
		})
	}
}

func TestGroupCommandPrintsHelp(t *testing.T) {
	f := newFixture(t)
	if err := f.execute(context.Background(), "init", "phase", "certs"); err == nil || err.Error() != "subcommand is required" {
		t.Fatalf("error %v, want the sub-command required, as upstream's", err)
	}
	out := f.out.String()
	for _, want := range []string{"Usage:", "kubeadm init phase certs [command]", "Available Commands:", "all", "apiserver", "Create the CA"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "legacy") {
		t.Errorf("help lists the hidden phase:\n%s", out)
	}
	if f.builds != 0 || len(f.events) != 0 {
		t.Error("printing help built data or ran phases")
	}
}

func TestPhaseCommandHelp(t *testing.T) {
	tests := []struct {
		args        []string
		want, avoid []string
	}{
		{
			args:  []string{"init", "phase", "--help"},
			want:  []string{"preflight", "certs", "etcd", "addon", "Check that the machine is ready"},
			avoid: []string{"secret"},
		},
		{
			args: []string{"init", "phase", "preflight", "--help"},
			want: []string{"kubeadm init phase preflight [api-server-endpoint] [flags]", "--config", "--rootfs"},
		},
		{
			args: []string{"init", "phase", "certs", "apiserver", "--help"},
			want: []string{"Aliases:", "apiserver, api", "--extra-san"},
		},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFixture(t)
			if err := f.execute(context.Background(), tc.args...); err != nil {
				t.Fatal(err)
			}
			out := f.out.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(out, a) {
					t.Errorf("help mentions %q:\n%s", a, out)
				}
			}
		})
	}
}

func findCommand(t *testing.T, root *cobra.Command, path ...string) *cobra.Command {
	t.Helper()
	c, rest, err := root.Find(path)
	if err != nil || len(rest) != 0 {
		t.Fatalf("no command %v: %v (left %v)", path, err, rest)
	}
	return c
}

func TestGeneratedFlags(t *testing.T) {
	tests := []struct {
		path    []string
		has     []string // local flags of the generated command
		shared  []string // flags that must be the init command's own flag
		hasnt   []string
		comesIn []string // flags reached through a persistent parent
	}{
		{path: []string{"init", "phase", "preflight"}, has: []string{"config"}, shared: []string{"config"}, hasnt: []string{"cert-dir", "token", "skip-phases"}, comesIn: []string{"rootfs"}},
		{path: []string{"init", "phase", "certs", "all"}, has: []string{"config", "cert-dir"}, shared: []string{"config", "cert-dir"}, hasnt: []string{"token", "extra-san"}},
		{path: []string{"init", "phase", "certs", "ca"}, has: []string{"cert-dir"}, shared: []string{"cert-dir"}, hasnt: []string{"config", "token", "extra-san"}},
		{path: []string{"init", "phase", "certs", "apiserver"}, has: []string{"extra-san"}, hasnt: []string{"config", "cert-dir"}},
		{path: []string{"init", "phase", "etcd", "local"}, has: []string{"kubeconfig"}, hasnt: []string{"config"}},
		{path: []string{"init", "phase", "certs"}, hasnt: []string{"config", "cert-dir", "extra-san"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.path, " "), func(t *testing.T) {
			f := newFixture(t)
			c := findCommand(t, f.root, tc.path...)
			for _, name := range tc.has {
				if c.LocalFlags().Lookup(name) == nil {
					t.Errorf("--%s missing", name)
				}
			}
			for _, name := range tc.shared {
				if c.Flags().Lookup(name) != f.init.Flags().Lookup(name) {
					t.Errorf("--%s is not the init command's flag", name)
				}
			}
			for _, name := range tc.hasnt {
				if c.Flags().Lookup(name) != nil {
					t.Errorf("--%s should not be there", name)
				}
			}
			for _, name := range tc.comesIn {
				if c.LocalFlags().Lookup(name) != nil {
					t.Errorf("--%s was copied although cobra passes it down", name)
				}
				if c.InheritedFlags().Lookup(name) == nil {
					t.Errorf("--%s does not reach the command", name)
				}
			}
		})
	}
}

func TestInheritedFlagsShareValues(t *testing.T) {
	f := newFixture(t)
	err := f.execute(context.Background(), "init", "phase", "certs", "all", "--config=/tmp/c.yaml", "--cert-dir", "/tmp/pki")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := f.runner.Data(nil)
	if d.config != "/tmp/c.yaml" || d.certDir != "/tmp/pki" {
		t.Errorf("data saw config %q and cert dir %q", d.config, d.certDir)
	}

	f = newFixture(t)
	if err := f.execute(context.Background(), "init", "phase", "etcd", "local", "--kubeconfig=/tmp/admin.conf"); err != nil {
		t.Fatal(err)
	}
	if f.kubeconfig != "/tmp/admin.conf" {
		t.Errorf("additional flag value %q not stored", f.kubeconfig)
	}
	if f.init.Flags().Lookup("kubeconfig") != nil {
		t.Error("an additional flag leaked onto the bound command")
	}
}

func TestSkipPhasesFlag(t *testing.T) {
	f := newFixture(t)
	fl := f.init.Flags().Lookup(SkipPhasesFlag)
	if fl == nil {
		t.Fatal("--skip-phases missing")
	}
	if fl.Value.Type() != "stringSlice" || fl.Usage != "List of phases to be skipped" {
		t.Errorf("--skip-phases is %s with help %q", fl.Value.Type(), fl.Usage)
	}
}

func TestHelpSection(t *testing.T) {
	f := newFixture(t)
	want := "Set up a control-plane node.\n\n" +
		"The \"init\" workflow runs these phases:\n" +
		"```\n" +
		"preflight        Check that the machine is ready\n" +
		"certs            Create the certificates\n" +
		"  /ca            Create the CA\n" +
		"  /apiserver     Create the API server certificate\n" +
		"etcd             Set up etcd\n" +
		"  /local         Write the local etcd manifest\n" +
		"addon            Install the add-ons\n" +
		"  /coredns       Install CoreDNS\n" +
		"  /kube-proxy    Install kube-proxy\n" +
		"```"
	if f.init.Long != want {
		t.Errorf("Long is\n%s\nwant\n%s", f.init.Long, want)
	}
	if err := f.execute(context.Background(), "init", "--help"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.out.String(), "  /kube-proxy    Install kube-proxy") {
		t.Errorf("init --help lacks the phase list:\n%s", f.out.String())
	}
}

func TestHelpSectionLayout(t *testing.T) {
	tests := []struct {
		name        string
		short, long string
		phases      []Phase[struct{}]
		want        string
	}{
		{
			name:   "deep nesting, no description, Short used when Long is empty",
			short:  "Reset a node",
			phases: []Phase[struct{}]{{Name: "a", Short: "A", Phases: []Phase[struct{}]{{Name: "b", Phases: []Phase[struct{}]{{Name: "c", Short: "C"}}}}}},
			want: "Reset a node\n\nThe \"reset\" workflow runs these phases:\n```\n" +
				"a         A\n" +
				"  /b\n" +
				"    /c    C\n" +
				"```",
		},
		{
			name:   "no help text at all; hidden subtree left out",
			phases: []Phase[struct{}]{{Name: "x", Short: "X"}, {Name: "h", Hidden: true, Phases: []Phase[struct{}]{{Name: "y", Short: "Y"}}}},
			want:   "The \"reset\" workflow runs these phases:\n```\nx    X\n```",
		},
		{
			name:   "trailing newlines of Long are trimmed",
			long:   "Reset a node.\n\n",
			phases: []Phase[struct{}]{{Name: "x", Short: "X"}},
			want:   "Reset a node.\n\nThe \"reset\" workflow runs these phases:\n```\nx    X\n```",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "reset", Short: tc.short, Long: tc.long}
			(&Runner[struct{}]{Phases: tc.phases}).BindToCommand(cmd)
			if cmd.Long != tc.want {
				t.Errorf("Long is\n%q\nwant\n%q", cmd.Long, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	run := func(context.Context, int) error { return nil }
	tests := []struct {
		name    string
		phases  []Phase[int]
		wantErr string
	}{
		{name: "valid", phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "all", RunAllSiblings: true}, {Name: "b", Run: run}}}}},
		{name: "empty name", phases: []Phase[int]{{Name: "a"}, {Name: "  "}}, wantErr: "phase number 2 of the workflow has no name"},
		{name: "empty nested name", phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{}}}}, wantErr: `phase number 1 of phase "a" has no name`},
		{name: "slash in name", phases: []Phase[int]{{Name: "a/b"}}, wantErr: `phase "a/b": a phase name must not contain "/"`},
		{name: "duplicate", phases: []Phase[int]{{Name: "a"}, {Name: "a [arg]"}}, wantErr: `phase "a" is declared more than once`},
		{name: "nested duplicate", phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "b"}, {Name: "b"}}}}, wantErr: `phase "a/b" is declared more than once`},
		{name: "top-level all", phases: []Phase[int]{{Name: "all", RunAllSiblings: true}}, wantErr: `phase "all" runs all its siblings, which only a sub-phase may do`},
		{name: "all with Run", phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "all", RunAllSiblings: true, Run: run}}}}, wantErr: `phase "a/all" runs all its siblings and so must not have`},
		{
			name:    "all with RunIf",
			phases:  []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "all", RunAllSiblings: true, RunIf: func(int) (bool, error) { return true, nil }}}}},
			wantErr: `phase "a/all" runs all its siblings and so must not have`,
		},
		{name: "two all", phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "all", RunAllSiblings: true}, {Name: "every", RunAllSiblings: true}}}}, wantErr: `phases "a/all" and "a/every" both run all their siblings`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runner[int]{Phases: tc.phases}
			err := r.Validate()
			runErr := r.Run(context.Background(), nil)
			if tc.wantErr == "" {
				if err != nil || runErr != nil {
					t.Fatalf("unexpected errors: %v, %v", err, runErr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate: got %v, want an error containing %q", err, tc.wantErr)
			}
			if runErr == nil || runErr.Error() != err.Error() {
				t.Errorf("Run: got %v, want %v", runErr, err)
			}
			defer func() {
				if recover() == nil {
					t.Error("BindToCommand accepted an invalid tree")
				}
			}()
			r.BindToCommand(&cobra.Command{Use: "x"})
		})
	}
}

func TestBindPanicsOnUnknownInheritedFlag(t *testing.T) {
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), `phase "a/b" inherits flag --nope`) {
			t.Errorf("got panic %v", p)
		}
	}()
	r := &Runner[int]{Phases: []Phase[int]{{Name: "a", Phases: []Phase[int]{{Name: "b", InheritFlags: []string{"nope"}}}}}}
	r.BindToCommand(&cobra.Command{Use: "join"})
}

func TestPhaseNames(t *testing.T) {
	f := newFixture(t)
	got, err := f.runner.PhaseNames()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"preflight", "certs", "certs/all", "certs/ca", "certs/apiserver", "certs/legacy",
		"etcd", "etcd/local", "addon", "addon/all", "addon/coredns", "addon/kube-proxy", "secret",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// recorder makes phases that note their Prepare, Run and Finish calls in
// got; the phase named fail fails.
type recorder struct {
	got  []string
	fail string
}

func (r *recorder) phase(name string, children ...Phase[int]) Phase[int] {
	return Phase[int]{
		Name:    name,
		Phases:  children,
		Prepare: func(context.Context, int) { r.got = append(r.got, "prepare "+name) },
		Run: func(context.Context, int) error {
			r.got = append(r.got, "run "+name)
			if name == r.fail {
				return errors.New("failed")
			}
			return nil
		},
		Finish: func(_ context.Context, _ int, err error) {
			if err != nil {
				name += " after an error"
			}
			r.got = append(r.got, "finish "+name)
		},
	}
}

func TestPrepareRunsFirstForReachedPhases(t *testing.T) {
	rec := &recorder{}
	phase := rec.phase
	r := &Runner[int]{
		Phases:     []Phase[int]{phase("a"), phase("b", phase("c"), phase("d")), phase("e")},
		SkipPhases: func(int) []string { return []string{"b/d", "e"} },
	}
	if err := r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"prepare a", "prepare b", "prepare c", "run a", "run b", "run c", "finish c", "finish b", "finish a"}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("got %v, want %v", rec.got, want)
	}
}

// TestFinishAfterAFailure: a failed run still finishes every phase it
// prepared, also those it never reached, and tells them it failed.
func TestFinishAfterAFailure(t *testing.T) {
	rec := &recorder{fail: "b"}
	phase := rec.phase
	r := &Runner[int]{Phases: []Phase[int]{phase("a"), phase("b", phase("c")), phase("d")}}
	if err := r.Run(context.Background(), nil); err == nil {
		t.Fatal("the run did not fail")
	}
	want := []string{"prepare a", "prepare b", "prepare c", "prepare d", "run a", "run b",
		"finish d after an error", "finish c after an error", "finish b after an error", "finish a after an error"}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("got %v, want %v", rec.got, want)
	}

	rec = &recorder{fail: "c"}
	if err := RunTree(context.Background(), rec.phase("a", rec.phase("b", rec.phase("c"))), 0, nil); err == nil {
		t.Fatal("the tree did not fail")
	}
	want = []string{"prepare a", "prepare b", "prepare c", "run a", "run b", "run c",
		"finish c after an error", "finish b after an error", "finish a after an error"}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("RunTree: got %v, want %v", rec.got, want)
	}
}

func TestRunTreePreparesFirst(t *testing.T) {
	rec := &recorder{}
	phase := rec.phase
	tree := phase("a", phase("b", phase("c")), phase("d"))
	if err := RunTree(context.Background(), tree, 0, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"prepare a", "prepare b", "prepare c", "run a", "run b", "run c", "finish c", "finish b", "finish a"}
	if !reflect.DeepEqual(rec.got, want) {
		t.Errorf("got %v, want %v", rec.got, want)
	}
}

func TestPlanSeesReachedPhases(t *testing.T) {
	probe := []string{"preflight", "certs", "certs/ca", "certs/apiserver", "certs/all", "etcd/local", "addon", "addon/kube-proxy", "secret"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"whole run with skips", []string{"init", "--skip-phases", "certs/apiserver,addon"},
			[]string{"preflight", "certs", "certs/ca", "etcd/local", "secret"}},
		{"one phase group", []string{"init", "phase", "certs", "all"},
			[]string{"certs", "certs/ca", "certs/apiserver"}},
		{"one phase", []string{"init", "phase", "etcd", "local"}, []string{"etcd/local"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var got []string
			plans := 0
			f.runner.Plan = func(_ *testData, reached func(string) bool) {
				plans++
				for _, p := range probe {
					if reached(p) {
						got = append(got, p)
					}
				}
			}
			if err := f.execute(context.Background(), tc.args...); err != nil {
				t.Fatal(err)
			}
			if plans != 1 || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan called %d times, saw %v; want once, %v", plans, got, tc.want)
			}
		})
	}
}
