package initphases

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
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
// A run that fails in a phase between the CA and kubelet-start leaves the
// kubelet running, as it leaves the files written so far.
type kubeletHeadStart struct {
	// Set while the phase tree is built.
	writeKubeconfig func(d *Data, w io.Writer) error                      // kubelet.conf
	startKubelet    func(ctx context.Context, d *Data, w io.Writer) error // kubelet-start's work

	// Per run: the Data planned for, the hold on the keys that can wait
	// (nil when the head start does not apply), and what each step did.
	data                        *Data
	hold                        *pki.KeyHold
	kubeconfigStep, kubeletStep headStartStep
}

// headStartStep is what one step of the head start did.
type headStartStep struct {
	ran bool
	out bytes.Buffer
	err error
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
		*h = kubeletHeadStart{writeKubeconfig: h.writeKubeconfig, startKubelet: h.startKubelet, data: d}
		if d.KubeletHeadStart && !d.DryRun && h.writeKubeconfig != nil && h.startKubelet != nil && freshNode(d) {
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
	h.kubeletStep.ran = true
	h.kubeletStep.err = h.startKubelet(ctx, d, &h.kubeletStep.out)
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
