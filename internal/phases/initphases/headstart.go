package initphases

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// kubeletHeadStart starts the kubelet of a fresh control-plane node early.
// The kubelet needs about a second from its start until it runs its first
// Pod; kubeadm makes most of its keys (the slow part of writing its files)
// in that second instead of before it.
//
// On a run it applies to (see plan), the certs and kubeconfig phases make
// only two keys while preflight runs, the cluster CA's and kubelet.conf's.
// Right after the certs/ca sub-phase, the head start writes kubelet.conf
// and the kubelet's files and starts the kubelet, as the kubeconfig/kubelet
// and kubelet-start phases would, and then lets the other keys be made. The
// run goes on in the usual order; when those two phases' turns come they
// print what the head start printed for them, so the output is that of the
// phases run in order. The kubelet watches the manifest folder and runs
// each static Pod as its manifest appears. (From 1.19, kubernetes#90892,
// upstream's own kubelet-start came right after the kubeconfig phase, so
// its kubelet too started before the manifests were written.)
//
// A run that fails in a phase between the CA and kubelet-start would, in
// upstream's order, not have started the kubelet nor written its files:
// the head start then stops the kubelet again and removes the kubelet's
// files it created (see finish). kubelet.conf and the other files written
// so far stay, as after any failed run.
type kubeletHeadStart struct {
	// Set while the phase tree is built.
	writeKubeconfig func(d *Data, w io.Writer) error                      // kubelet.conf
	startKubelet    func(ctx context.Context, d *Data, w io.Writer) error // kubelet-start's work
	stopKubelet     func(ctx context.Context) error                       // its service's stop

	// Per run: the Data planned for, the hold on the keys that can wait
	// (nil when the head start does not apply), and what each step did.
	data                        *Data
	hold                        *pki.KeyHold
	kubeconfigStep, kubeletStep headStartStep
	// kubeletFiles are the kubelet's files the head start found missing
	// before it wrote them.
	kubeletFiles []string
}

// headStartStep is what one step of the head start did.
type headStartStep struct {
	ran      bool
	reported bool // its phase's turn came
	out      bytes.Buffer
	err      error
}

// plan decides, once per Data, whether the head start applies: a run of
// "kubeadm init" that reaches certs/ca, kubeconfig/kubelet and kubelet-start
// (Data.KubeletHeadStart), not a dry run, on a node without a cluster CA
// certificate and kubelet.conf yet. It returns the hold the key pools of
// the certs and kubeconfig phases are to be started with, nil when the
// head start does not apply.
func (h *kubeletHeadStart) plan(d *Data) *pki.KeyHold {
	if h == nil {
		return nil
	}
	if h.data != d {
		*h = kubeletHeadStart{writeKubeconfig: h.writeKubeconfig, startKubelet: h.startKubelet, stopKubelet: h.stopKubelet, data: d}
		if d.KubeletHeadStart && !d.DryRun && h.writeKubeconfig != nil && h.startKubelet != nil && h.stopKubelet != nil && freshNode(d) {
			h.hold = pki.NewKeyHold()
		}
	}
	return h.hold
}

// caReady runs the head start, if it applies to d, once the cluster CA is
// in place (preflight has passed by then): kubelet.conf, then the kubelet.
// It then releases the held keys. Failures are kept for the phases to
// report in their turn.
func (h *kubeletHeadStart) caReady(ctx context.Context, d *Data) {
	if h == nil || h.plan(d) == nil || h.kubeconfigStep.ran {
		return
	}
	defer h.hold.Release()
	h.kubeconfigStep.ran = true
	h.kubeconfigStep.err = h.writeKubeconfig(d, &h.kubeconfigStep.out)
	if h.kubeconfigStep.err != nil {
		return
	}
	for _, name := range []string{kubelet.FlagsEnvFile, kubelet.InstanceConfigFile, kubelet.ConfigFile} {
		if _, err := os.Lstat(filepath.Join(d.KubeletDir, name)); os.IsNotExist(err) {
			h.kubeletFiles = append(h.kubeletFiles, name)
		}
	}
	h.kubeletStep.ran = true
	h.kubeletStep.err = h.startKubelet(ctx, d, &h.kubeletStep.out)
}

// finish runs once the run of d has ended with err. When the kubelet was
// started ahead of kubelet-start and the run failed before that phase's
// turn, it stops the kubelet and removes the kubelet's files the head start
// created, as upstream's order would have left the node: what failed may
// be fixed and the run repeated. The kubelet cannot act on half a control
// plane meanwhile either.
func (h *kubeletHeadStart) finish(ctx context.Context, d *Data, err error) {
	if h == nil || h.data != d || err == nil || !h.kubeletStep.ran || h.kubeletStep.reported {
		return
	}
	// The run may have ended because ctx was cancelled; stopping must
	// still happen.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	fmt.Fprintf(d.Out, "[kubelet-start] The run failed before this phase: stopping the kubelet, started ahead of it, and removing its files\n")
	if err := h.stopKubelet(ctx); err != nil {
		fmt.Fprintf(d.Out, "[kubelet-start] WARNING: could not stop the kubelet: %v\n", err)
	}
	for _, name := range h.kubeletFiles {
		p := filepath.Join(d.KubeletDir, name)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			fmt.Fprintf(d.Out, "[kubelet-start] WARNING: could not remove %s: %v\n", p, err)
		}
	}
}

// kubeconfigDone reports whether the head start wrote kubelet.conf for d;
// if so it copies what that printed to w and returns its error. Otherwise
// the phase does its work itself.
func (h *kubeletHeadStart) kubeconfigDone(d *Data, w io.Writer) (bool, error) {
	if h == nil || h.data != d {
		return false, nil
	}
	return h.kubeconfigStep.report(w)
}

// kubeletDone is kubeconfigDone for the kubelet-start phase.
func (h *kubeletHeadStart) kubeletDone(d *Data, w io.Writer) (bool, error) {
	if h == nil || h.data != d {
		return false, nil
	}
	return h.kubeletStep.report(w)
}

func (s *headStartStep) report(w io.Writer) (bool, error) {
	if !s.ran {
		return false, nil
	}
	s.reported = true
	if _, err := w.Write(s.out.Bytes()); err != nil {
		return true, err
	}
	return true, s.err
}

// PlanKubeletHeadStart sets d.KubeletHeadStart for a run of the init
// workflow: on when the run reaches the three phases the head start does
// the work of or follows (reached tells, see workflow.Runner.Plan).
func PlanKubeletHeadStart(d *Data, reached func(path string) bool) {
	d.KubeletHeadStart = reached("certs/ca") && reached("kubeconfig/kubelet") && reached("kubelet-start")
}

// freshNode reports whether d's node has neither a cluster CA certificate
// nor kubelet.conf: the first init of this node.
func freshNode(d *Data) bool {
	for _, p := range []string{
		filepath.Join(d.CertDir, mustCert(pki.CAName).BaseName+".crt"),
		filepath.Join(d.KubeconfigDir, kubeconfig.KubeletFile),
	} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}
