package joinphases

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// KubeletStartPhase gives the kubelet what it needs to join: the TLS
// bootstrap kubeconfig (bootstrap-kubelet.conf) and the cluster CA, then
// the cluster's kubelet configuration with this node's settings (as init's
// kubelet-start writes them), and (re)starts it. A Node of the same name
// that is Ready belongs to another machine: the join is refused before
// anything is written. Re-running it rewrites the same files.
func KubeletStartPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubelet-start [api-server-endpoint]",
		Short: "Write the kubelet's bootstrap credentials and configuration, then (re)start it",
		Long: `Write bootstrap-kubelet.conf (the bootstrap token and the cluster's CA, with
which the kubelet asks the cluster for its own client certificate), the
cluster CA certificate, and the kubelet's configuration and flags taken from
the cluster's kubelet-config ConfigMap with this node's settings; then
(re)start the kubelet. A control-plane node's kubelet talks to the API server
of its own node.`,
		InheritFlags: withFlags("cri-socket", "patches", "control-plane", "apiserver-advertise-address", "apiserver-bind-port"),
		Run:          runKubeletStart,
	}
}

func runKubeletStart(ctx context.Context, d *Data) error {
	boot, err := d.TLSBootstrapConfig(ctx)
	if err != nil {
		return err
	}
	cfg, err := d.InitConfig(ctx)
	if err != nil {
		return err
	}
	kc := boot.DeepCopy()
	cluster := currentCluster(kc)
	if cluster == nil {
		return errors.New("the discovered kubeconfig has no cluster for its current context")
	}
	if d.IsControlPlane() {
		// Its kubelet talks to the API server it runs itself.
		local, err := kubeconfig.LocalAPIServerURL(cfg.LocalAPIEndpoint)
		if err != nil {
			return err
		}
		cluster.Server = local
	}
	if err := refuseReadyNode(ctx, d, cfg.NodeRegistration.Name); err != nil {
		return err
	}
	path := filepath.Join(d.KubeconfigDir, BootstrapKubeletConf)
	fmt.Fprintf(d.Out, "[kubelet-start] Writing the kubelet's bootstrap kubeconfig to %q\n", path)
	if err := os.MkdirAll(d.KubeconfigDir, 0o755); err != nil {
		return err
	}
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		return err
	}
	caPath := d.Cfg.CACertPath
	if d.DryRun {
		caPath = filepath.Join(d.CertDir, filepath.Base(caPath))
	}
	if err := writeCA(caPath, cluster.CertificateAuthorityData); err != nil {
		return err
	}
	return runInitPhase(ctx, d, initphases.KubeletStartPhase())
}

// currentCluster is the cluster of the kubeconfig's current context.
func currentCluster(kc *clientcmdapi.Config) *clientcmdapi.Cluster {
	cur := kc.Contexts[kc.CurrentContext]
	if cur == nil {
		return nil
	}
	return kc.Clusters[cur.Cluster]
}

// writeCA writes the cluster CA certificate where the kubelet expects it.
// A different certificate already there is an error: it belongs to another
// cluster.
func writeCA(path string, data []byte) error {
	if len(data) == 0 {
		return errors.New("the discovered kubeconfig carries no CA certificate")
	}
	old, err := os.ReadFile(path)
	switch {
	case err == nil && string(old) == string(data):
		return nil
	case err == nil:
		return fmt.Errorf("%s holds another CA certificate than the cluster's: it belongs to another cluster (run \"kubeadm reset\" first)", path)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), pki.CertDirMode); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}

// refuseReadyNode fails when a Node of this name exists and is Ready: a
// running kubelet elsewhere owns that name.
func refuseReadyNode(ctx context.Context, d *Data, name string) error {
	if d.DryRun {
		return nil
	}
	c, err := d.BootstrapClient(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apiCallTimeout(d.Cfg.Timeouts))
	defer cancel()
	node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking for an existing Node %q: %w", name, err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return fmt.Errorf("a Node named %q is already in the cluster and Ready: delete it first (kubectl delete node %s) or join this machine under another name (--node-name)", name, name)
		}
	}
	return nil
}

// KubeletWaitBootstrapPhase waits until the kubelet has finished its TLS
// bootstrap (it wrote kubelet.conf) and answers on its health port, then
// removes bootstrap-kubelet.conf: the token it holds is not needed any
// more. Within timeouts.tlsBootstrap.
func KubeletWaitBootstrapPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "kubelet-wait-bootstrap",
		Short:        "Wait until the kubelet has its own credentials",
		InheritFlags: withFlags("control-plane", "cri-socket"),
		Run:          runKubeletWaitBootstrap,
	}
}

func runKubeletWaitBootstrap(ctx context.Context, d *Data) error {
	if d.DryRun {
		fmt.Fprintln(d.Out, "[dryrun] Would wait for the kubelet to finish its TLS bootstrap")
		return nil
	}
	cfg, err := d.InitConfig(ctx)
	if err != nil {
		return err
	}
	healthz := initphases.KubeletHealthzURL(cfg.ComponentConfigs.Kubelet)
	timeout := tlsBootstrapTimeout(d.Cfg.Timeouts)
	fmt.Fprintf(d.Out, "[kubelet-start] Waiting for the kubelet to get its own credentials through the TLS bootstrap. This can take up to %v\n", timeout)
	kubeletConf := filepath.Join(d.KubeconfigDir, KubeletConf)
	start := time.Now()
	deadline := start.Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		last = bootstrapDone(ctx, client, kubeletConf, healthz)
		if last == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet did not finish its TLS bootstrap within %v: %w\n%s", timeout, last, kubeletHelp)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Fprintf(d.Out, "[kubelet-start] The kubelet has its own credentials after %v\n", time.Since(start).Round(time.Millisecond))
	if err := os.Remove(filepath.Join(d.KubeconfigDir, BootstrapKubeletConf)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the bootstrap kubeconfig: %w", err)
	}
	return nil
}

// bootstrapDone checks that kubelet.conf exists and the kubelet is healthy.
func bootstrapDone(ctx context.Context, client *http.Client, kubeletConf, healthz string) error {
	if _, err := os.Stat(kubeletConf); err != nil {
		return fmt.Errorf("%s does not exist yet", kubeletConf)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthz, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the kubelet's health endpoint %s: %w", healthz, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the kubelet's health endpoint %s answered %s", healthz, resp.Status)
	}
	return nil
}

const kubeletHelp = `It may help to look at the kubelet:
  - is it running? systemctl status kubelet
  - what does it say? journalctl -xeu kubelet
  - can it reach the API server in bootstrap-kubelet.conf, and is the
    bootstrap token still valid? kubeadm token list (on a control-plane node)`
