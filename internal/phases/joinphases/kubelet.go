package joinphases

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/redirectpolicy"
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
(re)start the kubelet. A control-plane node's kubelet gets its credentials
through the cluster's endpoint too; kubelet-wait-bootstrap then points it at
the API server of its own node.`,
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
	// A control-plane node's kubelet too makes its TLS bootstrap through
	// the cluster's endpoint, which serves already, rather than through the
	// API server of its own node, which serves only once this node's etcd
	// member has joined: the kubelet's certificate and Node registration
	// then wait for nothing, and kubelet-wait-bootstrap points kubelet.conf
	// at the node's own API server afterwards (see pointKubeletAtLocalAPIServer),
	// or with NodeLocalAPILoadBalancer at the node's balancer.
	if err := refuseReadyNode(ctx, d, cfg.NodeRegistration.Name, cluster.CertificateAuthorityData); err != nil {
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
	caMode := pki.CertMode
	if cis.Enabled(cfg.FeatureGates) {
		caMode = cis.FileMode
	}
	if err := writeCA(caPath, cluster.CertificateAuthorityData, caMode); err != nil {
		return err
	}
	if apilb.Enabled(cfg.FeatureGates) {
		if err := installAPIServerLB(ctx, d, cluster.Server); err != nil {
			return err
		}
	}
	return runInitPhase(ctx, d, initphases.KubeletStartPhase())
}

// installAPIServerLB puts the node-local API server load balancer on this
// node before its kubelet starts, seeded with the API server this node
// joins through (and, on a control-plane node, its own, which it prefers).
// The kubelet makes its TLS bootstrap through the join address, since it
// runs no Pod before it has its credentials; kubelet-wait-bootstrap then
// points the kubelet at the balancer.
func installAPIServerLB(ctx context.Context, d *Data, server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the API server address %q of the discovered kubeconfig: %v", server, err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	v, err := d.InitView(ctx)
	if err != nil {
		return err
	}
	seed, preferred := []string{host}, ""
	if d.IsControlPlane() {
		preferred = initphases.LocalAPIServer(v)
		seed = append(seed, preferred)
	}
	return initphases.InstallAPIServerLB(v, seed, preferred)
}

// currentCluster is the cluster of the kubeconfig's current context.
func currentCluster(kc *clientcmdapi.Config) *clientcmdapi.Cluster {
	cur := kc.Contexts[kc.CurrentContext]
	if cur == nil {
		return nil
	}
	return kc.Clusters[cur.Cluster]
}

// writeCA writes the cluster CA certificate where the kubelet expects it,
// with mode. A different certificate already there is an error: it belongs
// to another cluster; the same one only gets mode.
func writeCA(path string, data []byte, mode os.FileMode) error {
	if len(data) == 0 {
		return errors.New("the discovered kubeconfig carries no CA certificate")
	}
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	switch {
	case err == nil && string(old) == string(data):
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != mode {
			return os.Chmod(path, mode)
		}
		return nil
	case err == nil:
		return fmt.Errorf("%s holds another CA certificate than the cluster's: it belongs to another cluster (run \"kubeadm reset\" first)", path)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), pki.CertDirMode); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

// refuseReadyNode fails when a Node of this name exists and is Ready: a
// running kubelet elsewhere owns that name. Unless the kubelet of this
// machine holds that Node's credentials, signed by the cluster's CA (ca):
// then the Node is this machine's, from a join that was interrupted after
// its kubelet registered, or that is run again, and joining goes on.
func refuseReadyNode(ctx context.Context, d *Data, name string, ca []byte) error {
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
			kubeletConf := filepath.Join(d.KubeconfigDir, KubeletConf)
			err := holdsNodeCredentials(kubeletConf, name, ca, d.now())
			if err == nil {
				fmt.Fprintf(d.Out, "[kubelet-start] The Ready Node %q is this machine's: its kubelet holds the Node's credentials, signed by the cluster's CA\n", name)
				return nil
			}
			klog.V(1).Infof("[kubelet-start] The Ready Node %q is not known as this machine's: %v", name, err)
			return fmt.Errorf("a Node named %q is already in the cluster and Ready: delete it first (kubectl delete node %s) or join this machine under another name (--node-name)", name, name)
		}
	}
	return nil
}

// holdsNodeCredentials checks that the kubeconfig file at path (the
// kubelet's) names a client certificate for the Node name (user
// system:node:<name> in group system:nodes) that the CA certificates in ca
// signed and that is valid at now.
func holdsNodeCredentials(path, name string, ca []byte, now time.Time) error {
	leaf, err := kubeconfig.ClientCertificateOf(path)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("the cluster's CA data holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("the kubelet's client certificate: %w", err)
	}
	if leaf.Subject.CommonName != "system:node:"+name || !slices.Contains(leaf.Subject.Organization, "system:nodes") {
		return fmt.Errorf("the kubelet's client certificate is for %q (groups %v), not for the Node %q", leaf.Subject.CommonName, leaf.Subject.Organization, name)
	}
	return nil
}

// KubeletWaitBootstrapPhase waits until the kubelet has finished its TLS
// bootstrap (it wrote kubelet.conf) and answers on its health port, then
// removes bootstrap-kubelet.conf: the token it holds is not needed any
// more. With NodeLocalAPILoadBalancer it then points the kubelet at the
// node's balancer (see pointKubeletAtBalancer); otherwise, on a
// control-plane node, at the node's own API server (see
// pointKubeletAtLocalAPIServer). Within timeouts.tlsBootstrap.
func KubeletWaitBootstrapPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "kubelet-wait-bootstrap",
		Short: "Wait until the kubelet has its own credentials",
		Long: `Wait until the kubelet has finished its TLS bootstrap (it wrote kubelet.conf)
and is healthy, then remove bootstrap-kubelet.conf. On a control-plane node,
once the kubelet has registered its Node, point kubelet.conf at the node's
own API server and restart the kubelet. With the NodeLocalAPILoadBalancer
feature gate, point kubelet.conf of any node at the node's API server load
balancer instead, and restart the kubelet.`,
		InheritFlags: withFlags("control-plane", "cri-socket"),
		Run:          runKubeletWaitBootstrap,
	}
}

func runKubeletWaitBootstrap(ctx context.Context, d *Data) error {
	if d.DryRun {
		fmt.Fprintln(d.Out, "[dryrun] Would wait for the kubelet to finish its TLS bootstrap")
		if cfg, err := d.InitConfig(ctx); err == nil && apilb.Enabled(cfg.FeatureGates) {
			fmt.Fprintf(d.Out, "[dryrun] Would point %q at the node-local API server load balancer %s and restart the kubelet\n", filepath.Join(d.KubeconfigDir, KubeletConf), apilb.URL)
		}
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
	client := &http.Client{Timeout: 2 * time.Second, CheckRedirect: redirectpolicy.SameHost}
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
	if apilb.Enabled(cfg.FeatureGates) {
		return pointKubeletAtBalancer(ctx, d, kubeletConf)
	}
	if d.IsControlPlane() {
		return pointKubeletAtLocalAPIServer(ctx, d, kubeletConf, deadline)
	}
	return nil
}

// pointKubeletAtBalancer makes the kubelet of a node, worker or control
// plane, reach the API servers through the node-local load balancer
// (NodeLocalAPILoadBalancer, docs/decisions/009): the kubelet wrote
// kubelet.conf naming the API server it joined through; its server becomes
// the balancer's address, checked against the name every API server
// certificate carries, and the kubelet is restarted. On a control-plane
// node the balancer prefers the node's own API server, so the kubelet
// talks to it whenever it is healthy, as upstream's local mode, and to
// another one when it is not. A kubelet.conf that names the balancer
// already is left alone.
func pointKubeletAtBalancer(ctx context.Context, d *Data, path string) error {
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return err
	}
	cluster := currentCluster(kc)
	if cluster == nil {
		return fmt.Errorf("%s has no cluster for its current context", path)
	}
	if cluster.Server == apilb.URL && cluster.TLSServerName == apilb.ServerName {
		return nil
	}
	fmt.Fprintf(d.Out, "[kubelet-start] Pointing %q at the node-local API server load balancer %s\n", path, apilb.URL)
	cluster.Server, cluster.TLSServerName = apilb.URL, apilb.ServerName
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		return err
	}
	kubelet.NewService(d.kubeletHost(), d.Out).Start(ctx)
	return nil
}

// pointKubeletAtLocalAPIServer leaves a control-plane node's kubelet
// talking to the API server of its own node, as upstream kubeadm's join
// leaves it (so that during upgrades a kubelet never talks to an older
// API server than its own node's). The kubelet made its TLS bootstrap
// through the cluster's endpoint (see runKubeletStart), and kubelet.conf,
// which it wrote, names that endpoint. Once the kubelet has registered its
// Node there, so that marking the node waits for nothing, the server of
// kubelet.conf becomes the local API server and the kubelet is restarted;
// it reaches that API server once this node's control plane is up (the
// static Pods run meanwhile). A kubelet.conf that names the local API
// server already is left alone: re-running the phase restarts nothing.
func pointKubeletAtLocalAPIServer(ctx context.Context, d *Data, path string, deadline time.Time) error {
	cfg, err := d.InitConfig(ctx)
	if err != nil {
		return err
	}
	local, err := kubeconfig.LocalAPIServerURL(cfg)
	if err != nil {
		return err
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return err
	}
	cluster := currentCluster(kc)
	if cluster == nil {
		return fmt.Errorf("%s has no cluster for its current context", path)
	}
	if cluster.Server == local {
		return nil
	}
	c, err := d.BootstrapClient(ctx)
	if err != nil {
		return err
	}
	name := cfg.NodeRegistration.Name
	err = apiclient.Poll(ctx, 200*time.Millisecond, time.Until(deadline), func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil, apiclient.Retry(err)
	})
	if err != nil {
		return fmt.Errorf("the kubelet did not register the Node %q: %w", name, err)
	}
	fmt.Fprintf(d.Out, "[kubelet-start] Pointing %q at this node's own API server %s\n", path, local)
	cluster.Server = local
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		return err
	}
	kubelet.NewService(d.kubeletHost(), d.Out).Start(ctx)
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
