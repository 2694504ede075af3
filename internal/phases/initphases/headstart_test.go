package initphases

import (
	"context"
	"crypto"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// startWatch is a fake machine for the kubelet service that notes, when
// the kubelet is (re)started, what existed and how many keys were made.
type startWatch struct {
	*ksSystem
	d       *Data
	made    *atomic.Int32
	started bool
	// At the kubelet's start:
	apiserverCert, kubeletConf, manifestDir bool
	keys                                    int32
}

func (s *startWatch) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if name == "systemctl" && len(args) == 2 && args[0] == "restart" && args[1] == "kubelet" {
		s.started = true
		s.apiserverCert = exists(filepath.Join(s.d.CertDir, "apiserver.crt"))
		s.kubeletConf = exists(filepath.Join(s.d.KubeconfigDir, kubeconfig.KubeletFile))
		s.manifestDir = exists(s.d.ManifestDir)
		s.keys = s.made.Load()
	}
	return s.ksSystem.Run(ctx, name, args...)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// runHeadStartTree runs certs, kubeconfig and kubelet-start with a head
// start as "kubeadm init" builds them, with the phases to skip, and
// returns what the fake machine saw.
func runHeadStartTree(t *testing.T, d *Data, skip ...string) *startWatch {
	t.Helper()
	sys, err := runHeadStartTreeErr(t, d, skip...)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// runHeadStartTreeErr is runHeadStartTree returning the run's error.
func runHeadStartTreeErr(t *testing.T, d *Data, skip ...string) (*startWatch, error) {
	t.Helper()
	return runHeadStartTreeWith(t, d, nil, skip...)
}

// runHeadStartTreeWith is runHeadStartTreeErr with more phases between
// kubeconfig and kubelet-start, where init has etcd and control-plane.
func runHeadStartTreeWith(t *testing.T, d *Data, between []workflow.Phase[*Data], skip ...string) (*startWatch, error) {
	t.Helper()
	made := &atomic.Int32{}
	gen := func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		made.Add(1)
		return pki.NewPrivateKey(alg)
	}
	host, fake := systemdHost("node1")
	sys := &startWatch{ksSystem: fake, d: d, made: made}
	host.system = sys
	hs := &kubeletHeadStart{}
	r := &workflow.Runner[*Data]{
		Phases: append(append([]workflow.Phase[*Data]{certsPhase(gen, hs), kubeconfigPhase(hs)}, between...),
			kubeletStartPhase(hs, host)),
		NewData:    func(*cobra.Command, []string) (*Data, error) { return d, nil },
		SkipPhases: func(*Data) []string { return skip },
		Plan:       PlanKubeletHeadStart,
	}
	return sys, r.Run(context.Background(), nil)
}

func headStartData(t *testing.T) *Data {
	d, _ := certsData(t, "")
	root := filepath.Dir(d.CertDir)
	d.KubeconfigDir = filepath.Join(root, "kubernetes")
	d.ManifestDir = filepath.Join(root, "kubernetes", "manifests")
	d.KubeletDir = filepath.Join(root, "kubelet")
	return d
}

// TestKubeletHeadStart: on a fresh node the kubelet starts right after the
// CA and kubelet.conf, when of the certificates' keys only the CA's was
// made, while the output is line for line that of the phases run in order
// without a head start.
func TestKubeletHeadStart(t *testing.T) {
	d := headStartData(t)
	early := runHeadStartTree(t, d)
	if !early.started || early.apiserverCert || !early.kubeletConf || !early.manifestDir || early.keys != 1 {
		t.Errorf("at the kubelet's start: apiserver.crt %v, kubelet.conf %v, manifest folder %v, %d certificate keys made; want false, true, true, 1",
			early.apiserverCert, early.kubeletConf, early.manifestDir, early.keys)
	}

	late := headStartData(t)
	late.KubeletHeadStart = false
	var plain workflow.Runner[*Data]
	host, sys := systemdHost("node1")
	plain.Phases = []workflow.Phase[*Data]{certsPhase(nil, nil), kubeconfigPhase(nil), kubeletStartPhase(nil, host)}
	plain.NewData = func(*cobra.Command, []string) (*Data, error) { return late, nil }
	if err := plain.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	norm := func(d *Data) string {
		return strings.ReplaceAll(d.Out.(interface{ String() string }).String(), filepath.Dir(d.CertDir), "ROOT")
	}
	if got, want := norm(d), norm(late); got != want {
		t.Errorf("output with a head start:\n%s\nwant, as without:\n%s", got, want)
	}
	if strings.Join(early.calls, "\n") != strings.Join(sys.calls, "\n") {
		t.Errorf("service commands %q, want %q", early.calls, sys.calls)
	}
}

// TestKubeletHeadStartOnlyWhenItApplies: a run without one of the three
// phases, a node with a CA or kubelet.conf, or a dry run starts the kubelet
// in its turn.
func TestKubeletHeadStartOnlyWhenItApplies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, d *Data)
		skip  []string
	}{
		{name: "kubelet-start skipped", skip: []string{"kubelet-start"}},
		{name: "kubeconfig/kubelet skipped", skip: []string{"kubeconfig/kubelet"}},
		{name: "existing CA", setup: func(t *testing.T, d *Data) {
			if err := runCertsSubPhase(t, d, pki.CAName); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := headStartData(t)
			if tc.setup != nil {
				tc.setup(t, d)
			}
			sys := runHeadStartTree(t, d, tc.skip...)
			if sys.started && !sys.apiserverCert {
				t.Error("the kubelet started before the certificates were done")
			}
		})
	}

	noop := &kubeletHeadStart{
		writeKubeconfig: func(*Data, io.Writer) error { return nil },
		startKubelet:    func(context.Context, *Data, io.Writer) error { return nil },
		stopKubelet:     func(context.Context) error { return nil },
	}
	d := headStartData(t)
	d.KubeletHeadStart = true
	if noop.plan(d) == nil {
		t.Fatal("no head start planned for a fresh node")
	}
	for name, change := range map[string]func(d *Data){
		"not asked for": func(d *Data) { d.KubeletHeadStart = false },
		"dry run":       func(d *Data) { d.DryRun = true },
		"existing kubelet.conf": func(d *Data) {
			if err := os.MkdirAll(d.KubeconfigDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d.KubeconfigDir, kubeconfig.KubeletFile), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		d := headStartData(t)
		d.KubeletHeadStart = true
		change(d)
		if noop.plan(d) != nil {
			t.Errorf("%s: a head start was planned", name)
		}
	}
}

// TestKubeletHeadStartFailures: what goes wrong in the head start is
// reported by the phase it belongs to, in that phase's turn, and a failed
// kubelet.conf leaves the kubelet alone.
func TestKubeletHeadStartFailures(t *testing.T) {
	t.Run("kubelet files", func(t *testing.T) {
		d := headStartData(t)
		blocker := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(blocker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		d.KubeletDir = filepath.Join(blocker, "kubelet")
		sys, err := runHeadStartTreeErr(t, d)
		if err == nil || !strings.Contains(err.Error(), "error execution phase kubelet-start") {
			t.Fatalf("error %v, want one of the kubelet-start phase", err)
		}
		if sys.started {
			t.Error("the kubelet was started without its files")
		}
		if !exists(filepath.Join(d.CertDir, "apiserver.crt")) || !exists(filepath.Join(d.KubeconfigDir, kubeconfig.SchedulerFile)) {
			t.Error("the phases before kubelet-start did not all run")
		}
	})
	t.Run("kubelet.conf", func(t *testing.T) {
		d := headStartData(t)
		// A dangling link: no kubeconfig file is there, and none can be
		// written.
		d.KubeconfigDir = filepath.Join(t.TempDir(), "kubernetes")
		if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), d.KubeconfigDir); err != nil {
			t.Fatal(err)
		}
		if !freshNode(d) {
			t.Fatal("the node does not look fresh: no head start to test")
		}
		sys, err := runHeadStartTreeErr(t, d)
		if err == nil || !strings.Contains(err.Error(), "error execution phase kubeconfig/") {
			t.Fatalf("error %v, want one of a kubeconfig phase", err)
		}
		if sys.started || len(sys.calls) > 0 {
			t.Errorf("the kubelet service was touched: %q", sys.calls)
		}
		if !exists(filepath.Join(d.CertDir, "sa.key")) {
			t.Error("the certificates were not all made before the error was reported")
		}
	})
}

// TestKubeletHeadStartUndoneOnFailure: when the run fails after the
// kubelet's early start but before kubelet-start's turn, the kubelet is
// stopped and the kubelet files the head start created are removed, as
// upstream's order would have left them; one that was there before stays.
func TestKubeletHeadStartUndoneOnFailure(t *testing.T) {
	d := headStartData(t)
	if err := os.MkdirAll(d.KubeletDir, 0o700); err != nil {
		t.Fatal(err)
	}
	instance := filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile)
	if err := os.WriteFile(instance, []byte("there before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := workflow.Phase[*Data]{Name: "control-plane", Run: func(context.Context, *Data) error {
		return errors.New("a bad patch")
	}}
	sys, err := runHeadStartTreeWith(t, d, []workflow.Phase[*Data]{boom})
	if err == nil || !strings.Contains(err.Error(), "error execution phase control-plane") {
		t.Fatalf("error %v, want the control-plane phase's", err)
	}
	if !sys.started {
		t.Fatal("the kubelet was not started ahead: nothing to undo")
	}
	if last := sys.calls[len(sys.calls)-1]; last != "systemctl stop kubelet" {
		t.Errorf("last service command %q, want the kubelet stopped; all: %q", last, sys.calls)
	}
	for _, name := range []string{kubelet.ConfigFile, kubelet.FlagsEnvFile} {
		if exists(filepath.Join(d.KubeletDir, name)) {
			t.Errorf("%s was left behind", name)
		}
	}
	if !exists(instance) {
		t.Errorf("%s, there before the run, was removed", kubelet.InstanceConfigFile)
	}
	if !exists(filepath.Join(d.KubeconfigDir, kubeconfig.KubeletFile)) {
		t.Error("kubelet.conf, written in its phase's turn, was removed")
	}
	out := d.Out.(interface{ String() string }).String()
	if !strings.Contains(out, "[kubelet-start] The run failed before this phase: stopping the kubelet") {
		t.Errorf("the output does not say the kubelet was stopped:\n%s", out)
	}
	if strings.Contains(out, "[kubelet-start] Starting the kubelet") {
		t.Errorf("the output reports kubelet-start, which never had its turn:\n%s", out)
	}

	// A failure in kubelet-start's own turn, or after it, is not undone.
	d = headStartData(t)
	late := workflow.Phase[*Data]{Name: "wait-control-plane", Run: func(context.Context, *Data) error {
		return errors.New("timed out")
	}}
	made := &atomic.Int32{}
	host, fake := systemdHost("node1")
	sys = &startWatch{ksSystem: fake, d: d, made: made}
	host.system = sys
	hs := &kubeletHeadStart{}
	r := &workflow.Runner[*Data]{
		Phases:  []workflow.Phase[*Data]{certsPhase(nil, hs), kubeconfigPhase(hs), kubeletStartPhase(hs, host), late},
		NewData: func(*cobra.Command, []string) (*Data, error) { return d, nil },
		Plan:    PlanKubeletHeadStart,
	}
	if err := r.Run(context.Background(), nil); err == nil {
		t.Fatal("the run did not fail")
	}
	if !sys.started {
		t.Fatal("the kubelet was not started ahead")
	}
	if last := sys.calls[len(sys.calls)-1]; last != "systemctl restart kubelet" {
		t.Errorf("last service command %q, want the kubelet's restart; all: %q", last, sys.calls)
	}
	if !exists(filepath.Join(d.KubeletDir, kubelet.ConfigFile)) {
		t.Error("config.yaml was removed after kubelet-start ran")
	}
}
