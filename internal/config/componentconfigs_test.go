package config

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/cis"
)

// initWithWarnings loads doc as a configuration file and returns the
// warnings defaulting gave.
func initWithWarnings(t *testing.T, doc string) []string {
	t.Helper()
	docs, err := Decode([]byte(doc), Strict)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	env := fakeEnv()
	env.Warn = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	cfg, err := env.InitConfiguration(context.Background(), docs, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.ComponentConfigs.Kubelet; k.ClusterDNS == nil {
		t.Fatal("clusterDNS must never be left unset")
	}
	return warnings
}

const clusterDoc = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16\n"

func TestComponentConfigWarnings(t *testing.T) {
	warnings := initWithWarnings(t, clusterDoc+`---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/other/manifests
clusterDomain: other.local
clusterDNS: [10.96.0.53]
authentication:
  x509:
    clientCAFile: /other/ca.crt
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
healthzBindAddress: 0.0.0.0
healthzPort: 10249
cgroupDriver: cgroupfs
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
bindAddress: 127.0.0.1
clusterCIDR: 10.1.0.0/16
clientConnection:
  kubeconfig: /other/kubeconfig
`)
	want := []string{
		"KubeProxyConfiguration bindAddress is 127.0.0.1, kept although kubeadm recommends 0.0.0.0",
		"KubeProxyConfiguration clusterCIDR is 10.1.0.0/16, kept although kubeadm recommends 10.244.0.0/16",
		"KubeProxyConfiguration clientConnection.kubeconfig is /other/kubeconfig, kept although kubeadm recommends /var/lib/kube-proxy/kubeconfig.conf",
		"KubeletConfiguration staticPodPath is /etc/other/manifests, kept although kubeadm recommends /etc/kubernetes/manifests",
		"KubeletConfiguration clusterDNS is [10.96.0.53], kept although kubeadm recommends [10.96.0.10]",
		"KubeletConfiguration clusterDomain is other.local, kept although kubeadm recommends cluster.local",
		"KubeletConfiguration authentication.x509.clientCAFile is /other/ca.crt, kept although kubeadm recommends /etc/kubernetes/pki/ca.crt",
		"KubeletConfiguration authentication.anonymous.enabled is true, kept although kubeadm recommends false",
		"KubeletConfiguration authorization.mode is AlwaysAllow, kept although kubeadm recommends Webhook",
		"KubeletConfiguration authentication.webhook.enabled is false, kept although kubeadm recommends true",
		"KubeletConfiguration healthzBindAddress is 0.0.0.0, kept although kubeadm recommends 127.0.0.1",
		"KubeletConfiguration healthzPort is 10249, kept although kubeadm recommends 10248",
	}
	if got := strings.Join(warnings, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func TestComponentConfigNoWarnings(t *testing.T) {
	for name, doc := range map[string]string{
		"no component configs": clusterDoc,
		"kubeadm's own values": clusterDoc + `---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: [10.96.0.10]
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
healthzPort: 10248
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
bindAddress: 0.0.0.0
clusterCIDR: 10.244.0.0/16
`,
		"no pod subnet, any cluster CIDR": `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 10.1.0.0/16
`,
	} {
		t.Run(name, func(t *testing.T) {
			if w := initWithWarnings(t, doc); len(w) != 0 {
				t.Errorf("unexpected warnings: %q", w)
			}
		})
	}
}

func TestExplicitEmptyClusterDNSKept(t *testing.T) {
	docs, err := Decode([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: []\n"), Strict)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dns := cfg.ComponentConfigs.Kubelet.ClusterDNS; dns == nil || len(dns) != 0 {
		t.Fatalf("an explicit empty clusterDNS must stay empty, got %#v", dns)
	}
}

// TestKubeletHardening: the CISHardening gate gives the kubelets a serving
// certificate from the cluster CA and, where the user set nothing, strong
// ciphers, the runtime's seccomp profile and a Pod PID limit; without the
// gate none of it is set.
func TestKubeletHardening(t *testing.T) {
	load := func(doc string) *kubeletv1beta1.KubeletConfiguration {
		t.Helper()
		docs, err := Decode([]byte(doc), Strict)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cfg.ComponentConfigs.Kubelet
	}
	gate := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nfeatureGates:\n  CISHardening: true\n"

	off := load(clusterDoc)
	if off.ServerTLSBootstrap || off.TLSCipherSuites != nil || off.SeccompDefault != nil || off.PodPidsLimit != nil {
		t.Errorf("without the gate: %+v", off)
	}
	on := load(gate)
	if !on.ServerTLSBootstrap || !slices.Equal(on.TLSCipherSuites, cis.CipherSuites()) ||
		on.SeccompDefault == nil || !*on.SeccompDefault || on.PodPidsLimit == nil || *on.PodPidsLimit != cis.PodPidsLimit {
		t.Errorf("with the gate: %+v", on)
	}
	own := load(gate + `---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
serverTLSBootstrap: false
tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]
seccompDefault: false
podPidsLimit: 100
`)
	if !own.ServerTLSBootstrap || !slices.Equal(own.TLSCipherSuites, []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}) ||
		*own.SeccompDefault || *own.PodPidsLimit != 100 {
		t.Errorf("with the user's own settings: %+v", own)
	}
}
