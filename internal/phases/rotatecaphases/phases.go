package rotatecaphases

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
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
	Components func(ctx context.Context) (carotation.Components, func(), error)
	// Renewal restarts and watches the components for re-issued
	// certificates (the automatic renewal's, decision 008); the function
	// it returns releases them.
	Renewal        func(ctx context.Context) (certrenewal.Node, func(), error)
	RestartKubelet func(ctx context.Context) error
	ClusterInfo    func(ctx context.Context, server string, cas carotation.Bundle) (carotation.Bundle, error)
	// KubeletClient reaches the API server as this node's kubelet, Issue
	// has a kubelet client CSR signed (nil: through the kubelet's
	// kubeconfig and the certificates API).
	KubeletClient func(ctx context.Context) (kubernetes.Interface, error)
	Issue         func(ctx context.Context, r carotation.Request) ([]byte, error)
	// Timeout bounds each wait.
	Timeout time.Duration
	// DropOldServiceAccountKey lets finish drop the old service-account
	// key within the hour after sign.
	DropOldServiceAccountKey bool
	// UploadCerts makes prepare store the new CAs, encrypted with
	// CertificateKey (a new one when empty), for the other control-plane
	// nodes; there, CertificateKey makes prepare download them.
	UploadCerts    bool
	CertificateKey string
}

var common = []string{"config", "cert-dir", "kubeconfig", "dry-run"}

// Phases is the workflow of "kubeadm certs rotate-ca", in the order a
// rotation takes (docs/decisions/011-rotating-certificate-authorities.md).
func Phases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		{
			Name:  "prepare",
			Short: "Make the new cluster, front proxy and etcd CAs and service-account key (on the first control-plane node)",
			Long: `Make a new cluster CA, front proxy CA and etcd CA (unless etcd is external),
each with the subject of the current one, a new key and the configured CA
validity, and a new service-account signing key (sa.key), in the folder
rotate-ca of the certificate folder. Nothing uses them yet. A new CA or key
already there is kept. Copy that folder to the other control-plane nodes before
running the trust phase there, or store them with --upload-certs (encrypted
with a certificate key, which it prints, for two hours, readable by cluster
administrators) and run prepare with --certificate-key on the other
control-plane nodes to download them. Prepare refuses to make other new CAs
while the cluster shows a rotation begun elsewhere.`,
			InheritFlags: append(slices.Clone(common), "upload-certs", "certificate-key"),
			Run:          runPrepare,
		},
		{
			Name:  "trust",
			Short: "Make this node, and the cluster, trust the current and the new CAs",
			Long: `On a control-plane node: the CA files, the kubeconfig files of /etc/kubernetes
and the cluster-info ConfigMap trust the current and the new CAs; sa.pub
lists the current and the new service-account public key; the controller
manager signs with a copy of the current CA (its signer wants a file of one
certificate); etcd and the API server (which read the etcd CA and sa.pub
only at start), the controller manager, the scheduler and the kubelet
restart one at a time; the phase waits until every kube-root-ca.crt
ConfigMap and extension-apiserver-authentication hold the new CAs too.

On any other node: the kubelet's kubeconfig and client CA file trust every
CA that cluster-info lists, and the kubelet restarts. Run it on the
control-plane nodes first.

Nothing is signed by the new CAs yet, and nothing stops trusting the
current ones. With several control-plane nodes, the cluster publishes the
new CAs once every one of them trusts them: the last one's trust waits for
that and restarts kube-proxy and the cluster DNS.`,
			InheritFlags: common,
			Run:          runTrust,
		},
		{
			Name:  "sign",
			Short: "Make the new CAs sign: re-issue this node's certificates and the kubelet's",
			Long: `On a control-plane node: the new CAs become the signing ones (ca.key,
front-proxy-ca.key, etcd/ca.key, the controller manager's signing CA; the CA files list
them first and still trust the previous ones); cluster-info lists the new
cluster CA first; sa.key becomes the new service-account key and sa.pub
lists it first, the API server and the controller manager restart to sign
tokens with it, and the time is recorded in rotate-ca/sa-signed; every
certificate and kubeconfig client certificate the
previous CAs signed is re-issued by the new ones, keeping its subject and
names, and the components are made to use them one at a time, each healthy
before the next, as "kubeadm certs renew expiring" does.

On every node: the kubelet gets a client certificate of the new CA (on a
control-plane node issued there with the new CA key, elsewhere asked of
the cluster as the kubelet's own rotation does, once every control-plane
node has signed), restarts on it, and its Node records it.

Run it on the control-plane nodes first, then on every other node.`,
			InheritFlags: common,
			Run:          runSign,
		},
		{
			Name:  "finish",
			Short: "Drop the previous CAs from every trust point",
			Long: `On a control-plane node: refuses while a certificate of this node, or the
kubelet client certificate of a Node, is not of the new CAs, and until an
hour has passed since sign made the new service-account key sign (the
kubelets replace the Pods' tokens of the old key by then), unless
--drop-old-service-account-key-now. Then the CA files and kubeconfig files
trust the new CAs alone, sa.pub lists the new service-account key alone,
the controller manager signs with ca.crt and ca.key again, etcd, the API
server, the controller manager, the scheduler and the kubelet restart one
at a time, cluster-info and extension-apiserver-authentication list the new
CAs alone, the phase waits until every kube-root-ca.crt ConfigMap does, and
the rotation's folder is removed.

On any other node (after the control-plane nodes): the kubelet trusts the
new CA alone and restarts.

With several control-plane nodes, the old service-account key is kept an
hour after the latest control-plane node's sign, and only the last
control-plane node to finish drops the old CAs from what the cluster
publishes (the others would publish them again).`,
			InheritFlags: append(slices.Clone(common), carotation.DropOldServiceAccountKeyFlag),
			Run:          runFinish,
		},
	}
}

func runPrepare(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		return fmt.Errorf("this node runs no control plane (no %s): make the new CAs on a control-plane node", d.ManifestDir+"/kube-apiserver.yaml")
	}
	staged, err := carotation.Staged(d.Cfg, d.CertDir)
	if err != nil {
		return err
	}
	switch {
	case !staged && d.CertificateKey != "" && !d.UploadCerts:
		// Another control-plane node made them and stored them.
		if d.DryRun {
			fmt.Fprintf(d.Out, "[rotate-ca] Would download the new CAs and service-account key from the Secret kube-system/%s to %s\n", carotation.SecretName, d.Dir())
			return nil
		}
		c, err := d.Client(ctx)
		if err != nil {
			return err
		}
		return carotation.Download(ctx, c, d.Cfg, d.CertDir, d.CertificateKey, d.Out)
	case !staged:
		// Another control-plane node may have begun: its new CAs are to
		// be copied here, not replaced by others.
		c, err := d.Client(ctx)
		if err != nil {
			return err
		}
		if err := carotation.CheckNoRotation(ctx, c); err != nil {
			return err
		}
	}
	if err := carotation.Prepare(d.Cfg, d.CertDir, d.KeyOptions, d.DryRun, d.Out); err != nil {
		return err
	}
	if !d.UploadCerts {
		return nil
	}
	if d.DryRun {
		fmt.Fprintf(d.Out, "[rotate-ca] Would store the new CAs and service-account key, encrypted, in the Secret kube-system/%s\n", carotation.SecretName)
		return nil
	}
	key := d.CertificateKey
	if key == "" {
		if key, err = copycerts.NewKey(); err != nil {
			return err
		}
	}
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	at := time.Now()
	if d.KeyOptions.Now != nil {
		at = d.KeyOptions.Now()
	}
	if err := carotation.Upload(ctx, c, d.Cfg, d.CertDir, key, at); err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[rotate-ca] Stored the new CAs and service-account key, encrypted, in the Secret kube-system/%s for %v. On every other control-plane node, run \"kubeadm certs rotate-ca phase prepare --certificate-key <key>\" (or the whole command with that flag) to download them.\n", carotation.SecretName, copycerts.TokenTTL)
	fmt.Fprintf(d.Out, "[rotate-ca] Using certificate key:\n%s\n", key)
	return nil
}

func runTrust(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		return d.worker().Trust(ctx)
	}
	return d.controlPlane(ctx, false, (*carotation.ControlPlane).Trust)
}

func runSign(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		return d.worker().Sign(ctx)
	}
	return d.controlPlane(ctx, true, (*carotation.ControlPlane).Sign)
}

func runFinish(ctx context.Context, d *Data) error {
	if !d.ControlPlane {
		return d.worker().Finish(ctx)
	}
	return d.controlPlane(ctx, false, (*carotation.ControlPlane).Finish)
}

func (d *Data) kubeletCert() *carotation.KubeletCert {
	return &carotation.KubeletCert{
		KubeletConf: d.KubeletConf, StateDir: d.Dir(), Client: d.KubeletClient, Issue: d.Issue,
		RestartKubelet: d.RestartKubelet, NewKey: d.KeyOptions.NewKey, Now: d.KeyOptions.Now,
		Timeout: d.Timeout, DryRun: d.DryRun, Out: d.Out,
	}
}

func (d *Data) worker() *carotation.Worker {
	return &carotation.Worker{
		KubeletConf: d.KubeletConf, CAFile: d.KubeletCAFile, StateDir: d.Dir(),
		ClusterInfo: d.ClusterInfo, RestartKubelet: d.RestartKubelet, Kubelet: d.kubeletCert(),
		DryRun: d.DryRun, Out: d.Out,
	}
}

// controlPlane runs step on this control-plane node, with the cluster and
// the components reached (not in a dry run), and the renewal's
// restarts when renewal is set.
func (d *Data) controlPlane(ctx context.Context, renewal bool, step func(*carotation.ControlPlane, context.Context) error) error {
	p := &carotation.ControlPlane{
		Layout: d.Layout, RestartKubelet: d.RestartKubelet,
		DryRun: d.DryRun, Out: d.Out, Timeout: d.Timeout,
		Cfg: d.Cfg, KeyOptions: d.KeyOptions, Kubelet: d.kubeletCert(),
		DropOldServiceAccountKey: d.DropOldServiceAccountKey,
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
		if renewal {
			node, release, err := d.Renewal(ctx)
			if err != nil {
				return err
			}
			defer release()
			p.Renewal = node
		}
	}
	return step(p, ctx)
}
