package upgradephases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet/kubelettest"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// writeKubeletConf writes a kubelet.conf whose cluster is server, with the
// rotated client certificate named by path as the kubelet writes it.
func writeKubeletConf(t *testing.T, dir, server string) string {
	t.Helper()
	path := filepath.Join(dir, kubeletKubeconfig)
	kc := &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": {Server: server, CertificateAuthorityData: []byte("ca")}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: "/var/lib/kubelet/pki/kubelet-client-current.pem", ClientKey: "/var/lib/kubelet/pki/kubelet-client-current.pem"}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth"}},
		CurrentContext: "default-context",
	}
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKubeconfigPhase: the hidden kubeconfig phase points a control-plane
// node's kubelet.conf that names the control-plane endpoint at the node's
// own API server, keeps its client certificate files, and restarts the
// kubelet; anything else is left alone, a dry run only says what it would
// do, and a second run changes nothing.
func TestKubeconfigPhase(t *testing.T) {
	const shared, local = "https://cp.example:6443", "https://10.0.0.5:6443"
	for _, tc := range []struct {
		name         string
		server       string // "" writes no kubelet.conf
		endpoint     string // controlPlaneEndpoint
		controlPlane bool
		dryRun       bool
		wantServer   string
		wantRestart  bool
	}{
		{name: "endpoint", server: shared, endpoint: "cp.example", controlPlane: true, wantServer: local, wantRestart: true},
		{name: "already local", server: local, endpoint: "cp.example", controlPlane: true, wantServer: local},
		{name: "another server", server: "https://lb.other:6443", endpoint: "cp.example", controlPlane: true, wantServer: "https://lb.other:6443"},
		{name: "no endpoint", server: local, controlPlane: true, wantServer: local},
		{name: "worker", server: shared, endpoint: "cp.example", wantServer: shared},
		{name: "dry run", server: shared, endpoint: "cp.example", controlPlane: true, dryRun: true, wantServer: shared},
		{name: "no kubelet.conf", endpoint: "cp.example", controlPlane: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var path string
			if tc.server != "" {
				path = writeKubeletConf(t, dir, tc.server)
			}
			host := &kubelettest.SystemdHost{}
			var out bytes.Buffer
			cfg := &kubeadm.InitConfiguration{LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.5", BindPort: 6443}}
			cfg.ControlPlaneEndpoint = tc.endpoint
			configtest.Parse(cfg)
			d := &Data{
				Cfg: cfg, Node: &upgrade.LocalNode{ControlPlane: tc.controlPlane},
				KubernetesDir: dir, DryRun: tc.dryRun, Service: host, Out: &out,
			}
			for run := 0; run < 2; run++ {
				if err := runKubeconfig(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			}
			restarts := strings.Count(strings.Join(host.Calls, "\n"), "systemctl restart kubelet")
			if want := map[bool]int{true: 1}[tc.wantRestart]; restarts != want {
				t.Errorf("the kubelet was restarted %d times, want %d (ran %q)", restarts, want, host.Calls)
			}
			if tc.dryRun && !strings.Contains(out.String(), "[dryrun] Would point") {
				t.Errorf("the dry run did not say what it would do:\n%s", out.String())
			}
			// Upstream's upgrade node ends the phase so on a control-plane
			// node, changed or not.
			const done = "[upgrade/kubeconfig] The kubeconfig files for this node were successfully upgraded!\n"
			if got := strings.HasSuffix(out.String(), done); got != tc.controlPlane {
				t.Errorf("control plane %v: output %q; want it to end with %q: %v", tc.controlPlane, out.String(), done, tc.controlPlane)
			}
			if path == "" {
				if _, err := os.Stat(filepath.Join(dir, kubeletKubeconfig)); !os.IsNotExist(err) {
					t.Errorf("kubelet.conf was written: %v", err)
				}
				return
			}
			kc, err := kubeconfig.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := kubeconfig.CurrentCluster(path, kc)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != tc.wantServer {
				t.Errorf("server %q, want %q", c.Server, tc.wantServer)
			}
			if u := kc.AuthInfos["default-auth"]; u.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" || len(u.ClientCertificateData) > 0 {
				t.Errorf("the rotated client certificate is no longer named by its file: %+v", u)
			}
		})
	}
}
