package carotation

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Worker is the trust step on a node without a control plane: it makes
// the kubelet trust the CAs the cluster-info ConfigMap lists, which the
// control-plane nodes' trust step set.
type Worker struct {
	// KubeletConf is the kubelet's kubeconfig (/etc/kubernetes/kubelet.conf).
	KubeletConf string
	// CAFile is the kubelet's clientCAFile (/etc/kubernetes/pki/ca.crt).
	CAFile string
	// StateDir holds the restarts still owed (the rotation's folder).
	StateDir string
	// ClusterInfo reads the CAs cluster-info lists from the API server at
	// server, trusting cas (nil: ReadClusterInfo).
	ClusterInfo    func(ctx context.Context, server string, cas Bundle) (Bundle, error)
	RestartKubelet func(ctx context.Context) error
	// Kubelet renews the kubelet's client certificate (sign step).
	Kubelet *KubeletCert
	DryRun  bool
	Out     io.Writer
}

// listed reads the CAs cluster-info lists, trusting those kubelet.conf
// trusts now.
func (w *Worker) listed(ctx context.Context) (cur, listed Bundle, err error) {
	_, cluster, err := loadKubeconfig(w.KubeletConf)
	if err != nil {
		return nil, nil, err
	}
	if cur, err = kubeconfigCAs(w.KubeletConf); err != nil {
		return nil, nil, err
	}
	read := w.ClusterInfo
	if read == nil {
		read = ReadClusterInfo
	}
	listed, err = read(ctx, cluster.Server, cur)
	return cur, listed, err
}

// Sign gives the kubelet a client certificate of the CA that signs now,
// the first CA cluster-info lists (the last control-plane node's sign
// step put it there), restarts it and records it on the Node
// (KubeletCert). Run again, it changes nothing.
//
// The kubelet's trust lists the CAs in the order cluster-info listed
// them at trust, the current CA first: while cluster-info still lists
// that one first, some control-plane node has not signed yet, and its
// controller manager, if it leads, would sign the kubelet's request with
// the old CA. (A kubelet may read only its own Node, so the control-plane
// Nodes' records are not for the worker to read.)
func (w *Worker) Sign(ctx context.Context) error {
	cur, listed, err := w.listed(ctx)
	if err != nil {
		return err
	}
	if len(listed) < 2 {
		fmt.Fprintf(w.Out, "[rotate-ca] cluster-info lists one CA: no rotation to sign for (run the trust and sign phases on the control-plane nodes first)\n")
		return nil
	}
	if len(cur) < 2 {
		return fmt.Errorf("%s trusts %d CA while cluster-info lists %d: run the trust phase on this node first", w.KubeletConf, len(cur), len(listed))
	}
	if listed[0].Equal(cur[0]) {
		return fmt.Errorf("cluster-info does not list the new cluster CA first yet: run \"kubeadm certs rotate-ca phase sign\" on every control-plane node first")
	}
	return w.Kubelet.Renew(ctx, listed[0])
}

// Finish makes the kubelet trust only the CAs cluster-info lists, once
// the control-plane nodes' finish step left the new CA alone there, and
// restarts it; then the rotation's folder of this node is removed. Run
// again, it changes nothing.
func (w *Worker) Finish(ctx context.Context) error {
	_, listed, err := w.listed(ctx)
	if err != nil {
		return err
	}
	if len(listed) > 1 {
		return fmt.Errorf("cluster-info still lists %d CAs: run the finish phase on the control-plane nodes first", len(listed))
	}
	cred, err := w.Kubelet.read()
	if err != nil {
		return err
	}
	if cred.cert.CheckSignatureFrom(listed[0]) != nil {
		return fmt.Errorf("the kubelet's client certificate is not signed by the CA cluster-info lists: run the sign phase on this node first")
	}
	pending := pendingPath(w.StateDir)
	need, err := pending.read()
	if err != nil {
		return err
	}
	confDiffers, err := setKubeconfigCAs(w.KubeletConf, listed, true)
	if err != nil {
		return err
	}
	fileDiffers, err := writeBundle(w.CAFile, listed, true)
	if err != nil {
		return err
	}
	if confDiffers && !slices.Contains(need, Kubelet) {
		need = append(need, Kubelet)
	}
	if w.DryRun {
		if fileDiffers {
			fmt.Fprintf(w.Out, "[rotate-ca] Would write %s (the kubelet's client CAs: the new one alone)\n", w.CAFile)
		}
		if confDiffers {
			fmt.Fprintf(w.Out, "[rotate-ca] Would write %s (certificate-authority-data: the new CA alone)\n", w.KubeletConf)
		}
		if slices.Contains(need, Kubelet) {
			fmt.Fprintf(w.Out, "[rotate-ca] Would restart the kubelet\n")
		}
		return nil
	}
	if err := pending.write(need); err != nil {
		return fmt.Errorf("recording the restarts to make: %w", err)
	}
	if fileDiffers {
		if _, err := writeBundle(w.CAFile, listed, false); err != nil {
			return err
		}
		fmt.Fprintf(w.Out, "[rotate-ca] Wrote %s (the kubelet's client CAs: the new one alone)\n", w.CAFile)
	}
	if confDiffers {
		if _, err := setKubeconfigCAs(w.KubeletConf, listed, false); err != nil {
			return err
		}
		fmt.Fprintf(w.Out, "[rotate-ca] Wrote %s (certificate-authority-data: the new CA alone)\n", w.KubeletConf)
	}
	if slices.Contains(need, Kubelet) {
		fmt.Fprintf(w.Out, "[rotate-ca] Restarting the kubelet\n")
		if err := w.RestartKubelet(ctx); err != nil {
			return fmt.Errorf("the kubelet did not come back: %w (run the phase again once it is healthy)", err)
		}
	}
	if err := os.RemoveAll(w.StateDir); err != nil {
		return fmt.Errorf("removing the rotation's folder: %w", err)
	}
	fmt.Fprintf(w.Out, "[rotate-ca] This node trusts the new CA alone\n")
	return nil
}

// Trust makes kubelet.conf's certificate-authority-data and the kubelet's
// client CA file hold every CA cluster-info lists (adding, never
// removing), then restarts the kubelet, which reads kubelet.conf only at
// start. The ConfigMap is read over TLS checked against the CAs the node
// trusts now. Run again, it changes nothing.
func (w *Worker) Trust(ctx context.Context) error {
	_, cluster, err := loadKubeconfig(w.KubeletConf)
	if err != nil {
		return err
	}
	cur, err := kubeconfigCAs(w.KubeletConf)
	if err != nil {
		return err
	}
	read := w.ClusterInfo
	if read == nil {
		read = ReadClusterInfo
	}
	listed, err := read(ctx, cluster.Server, cur)
	if err != nil {
		return err
	}
	want := bundleOf(append(slices.Clone(cur), listed...)...)
	fileCur, err := ReadBundle(w.CAFile)
	if err != nil {
		return err
	}
	fileWant := bundleOf(append(fileCur, want...)...)
	pending := pendingPath(w.StateDir)
	need, err := pending.read()
	if err != nil {
		return err
	}
	confDiffers, err := setKubeconfigCAs(w.KubeletConf, want, true)
	if err != nil {
		return err
	}
	fileDiffers, err := writeBundle(w.CAFile, fileWant, true)
	if err != nil {
		return err
	}
	if confDiffers && !slices.Contains(need, Kubelet) {
		need = append(need, Kubelet)
	}
	if w.DryRun {
		if confDiffers {
			fmt.Fprintf(w.Out, "[rotate-ca] Would write %s (certificate-authority-data: %d CAs)\n", w.KubeletConf, len(want))
		}
		if fileDiffers {
			fmt.Fprintf(w.Out, "[rotate-ca] Would write %s (the kubelet's client CAs: %d)\n", w.CAFile, len(fileWant))
		}
		if slices.Contains(need, Kubelet) {
			fmt.Fprintf(w.Out, "[rotate-ca] Would restart the kubelet\n")
		}
		return nil
	}
	if len(listed) < 2 && !confDiffers && !fileDiffers && len(need) == 0 {
		fmt.Fprintf(w.Out, "[rotate-ca] cluster-info lists one CA, which this node trusts: nothing to do (run this phase on the control-plane nodes first)\n")
		return nil
	}
	if err := pending.write(need); err != nil {
		return fmt.Errorf("recording the restarts to make: %w", err)
	}
	if fileDiffers {
		if _, err := writeBundle(w.CAFile, fileWant, false); err != nil {
			return err
		}
		fmt.Fprintf(w.Out, "[rotate-ca] Wrote %s (the kubelet's client CAs)\n", w.CAFile)
	}
	if confDiffers {
		if _, err := setKubeconfigCAs(w.KubeletConf, want, false); err != nil {
			return err
		}
		fmt.Fprintf(w.Out, "[rotate-ca] Wrote %s (certificate-authority-data)\n", w.KubeletConf)
	}
	if slices.Contains(need, Kubelet) {
		fmt.Fprintf(w.Out, "[rotate-ca] Restarting the kubelet\n")
		if err := w.RestartKubelet(ctx); err != nil {
			return fmt.Errorf("the kubelet did not come back: %w (run the phase again once it is healthy)", err)
		}
		if err := pending.write(nil); err != nil {
			return err
		}
	}
	if err := w.Kubelet.RecordTrust(ctx, want); err != nil {
		return err
	}
	fmt.Fprintf(w.Out, "[rotate-ca] This node trusts the %d CAs cluster-info lists\n", len(listed))
	return nil
}

// ReadClusterInfo reads, without credentials, the CAs the cluster-info
// ConfigMap lists, from the API server at server, whose certificate must
// chain to one of cas.
func ReadClusterInfo(ctx context.Context, server string, cas Bundle) (Bundle, error) {
	c, err := apiclient.FromRESTConfig(&rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAData: cas.PEM()}}, v1beta4.DefaultKubernetesAPICall)
	if err != nil {
		return nil, err
	}
	cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the cluster-info ConfigMap from %s: %w", server, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	if err != nil {
		return nil, fmt.Errorf("the cluster-info ConfigMap: %w", err)
	}
	for _, cl := range cfg.Clusters {
		return ParseBundle(cl.CertificateAuthorityData)
	}
	return nil, fmt.Errorf("the cluster-info ConfigMap names no cluster")
}
