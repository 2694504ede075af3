package rotatecaphases

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Data is what the phases share; the command fills it once.
type Data struct {
	Cfg *kubeadm.ClusterConfiguration
	carotation.Layout
	// KubeletConf and KubeletCAFile are the kubelet's kubeconfig and
	// client CA file.
	KubeletConf, KubeletCAFile string
	// ControlPlane: this node runs a control plane (it has the API
	// server's manifest).
	ControlPlane bool
	DryRun       bool
	Out          io.Writer
	KeyOptions   pki.Options
	// Client reaches the API server as a cluster administrator.
	Client func(ctx context.Context) (kubernetes.Interface, error)
	// Components restarts this node's control-plane components; the
	// function it returns releases them.
	Components     func(ctx context.Context) (carotation.Components, func(), error)
	RestartKubelet func(ctx context.Context) error
	ClusterInfo    func(ctx context.Context, server string, cas carotation.Bundle) (carotation.Bundle, error)
	// Timeout bounds each wait.
	Timeout time.Duration
}

var common = []string{"config", "cert-dir", "kubeconfig", "dry-run"}

// Phases is the workflow of "kubeadm certs rotate-ca", in the order a
// rotation takes. Only its first steps exist so far: making the new CAs
// and trusting them everywhere; signing with them and dropping the old
// ones are to come (docs/decisions/011-rotating-certificate-authorities.md).
func Phases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		{
			Name:  "prepare",
			Short: "Make the new cluster CA and front proxy CA (on the first control-plane node)",
			Long: `Make a new cluster CA and a new front proxy CA, each with the subject of the
current one, a new key and the configured CA validity, in the folder
rotate-ca of the certificate folder. Nothing uses them yet. A new CA already
there is kept. Copy that folder to the other control-plane nodes before
running the trust phase there.`,
			InheritFlags: common,
			Run:          runPrepare,
		},
		{
			Name:  "trust",
			Short: "Make this node, and the cluster, trust the current and the new CAs",
			Long: `On a control-plane node: the CA files, the kubeconfig files of /etc/kubernetes
and the cluster-info ConfigMap trust the current and the new CAs; the
controller manager signs with a copy of the current CA (its signer wants a
file of one certificate); the controller manager, the scheduler and the
kubelet restart one at a time; the phase waits until every kube-root-ca.crt
ConfigMap and extension-apiserver-authentication hold the new CAs too.

On any other node: the kubelet's kubeconfig and client CA file trust every
CA that cluster-info lists, and the kubelet restarts. Run it on the
control-plane nodes first.

Nothing is signed by the new CAs yet, and nothing stops trusting the
current ones.`,
			InheritFlags: common,
			Run:          runTrust,
		},
	}
}

func runPrepare(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		return fmt.Errorf("this node runs no control plane (no %s): make the new CAs on a control-plane node", d.ManifestDir+"/kube-apiserver.yaml")
	}
	return carotation.Prepare(d.Cfg, d.CertDir, d.KeyOptions, d.DryRun, d.Out)
}

func runTrust(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		w := &carotation.Worker{
			KubeletConf: d.KubeletConf, CAFile: d.KubeletCAFile, StateDir: d.Dir(),
			ClusterInfo: d.ClusterInfo, RestartKubelet: d.RestartKubelet, DryRun: d.DryRun, Out: d.Out,
		}
		return w.Trust(ctx)
	}
	p := &carotation.ControlPlane{
		Layout: d.Layout, RestartKubelet: d.RestartKubelet,
		DryRun: d.DryRun, Out: d.Out, Timeout: d.Timeout,
	}
	if !d.DryRun {
		client, err := d.Client(ctx)
		if err != nil {
			return err
		}
		p.Client = client
		comps, release, err := d.Components(ctx)
		if err != nil {
			return err
		}
		defer release()
		p.Components = comps
	}
	return p.Trust(ctx)
}
