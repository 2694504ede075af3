package kubeproxy

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// goldenCases are the configurations under testdata/configs; each one's
// manifests are testdata/<case>.yaml. test/integration checks that upstream
// kubeadm prints the same objects for them.
var goldenCases = []string{"default", "custom", "ipv6", "ci"}

func loadConfig(t *testing.T, name string) *kubeadm.InitConfiguration {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "configs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := config.Decode(data, config.Strict)
	if err != nil {
		t.Fatal(err)
	}
	env := configtest.Environment("10.0.0.5")
	// A "ci/" label stands for the CI build of the same name.
	env.ResolveVersion = func(_ context.Context, v string) (string, error) { return strings.TrimPrefix(v, "ci/"), nil }
	cfg, err := env.InitConfiguration(context.Background(), docs, config.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestGolden(t *testing.T) {
	for _, name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			a, err := Build(loadConfig(t, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Manifests()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("manifests differ from %s; got:\n%s", path, got)
			}
		})
	}
}

func TestBuildValues(t *testing.T) {
	tests := []struct {
		cfg, server, image, inConf string
	}{
		{"default", "https://10.199.0.2:6443", "registry.k8s.io/kube-proxy:v1.36.3", "bindAddress: 0.0.0.0\n"},
		{"custom", "https://cp.example:6444", "my.registry/k8s/kube-proxy:v1.36.3", "mode: ipvs\n"},
		{"ipv6", "https://[fd00::1]:6443", "registry.k8s.io/kube-proxy:v1.36.3", "clusterCIDR: fd00:10:244::/56,10.244.0.0/16\n"},
		{"ci", "https://10.0.0.5:6443", "gcr.io/k8s-staging-ci-images/kube-proxy:v1.36.3-alpha.0.1_abcdef", "kind: KubeProxyConfiguration\n"},
	}
	for _, tt := range tests {
		t.Run(tt.cfg, func(t *testing.T) {
			a, err := Build(loadConfig(t, tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load([]byte(a.ConfigMap.Data[KubeconfigKey]))
			if err != nil {
				t.Fatalf("kubeconfig.conf does not parse: %v", err)
			}
			cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
			if cluster.Server != tt.server || cluster.CertificateAuthority != serviceAccountCA {
				t.Errorf("kubeconfig cluster %+v, want server %s with the service-account CA", cluster, tt.server)
			}
			if got := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].TokenFile; got != serviceAccountToken {
				t.Errorf("kubeconfig token file %q", got)
			}
			if got := a.DaemonSet.Spec.Template.Spec.Containers[0].Image; got != tt.image {
				t.Errorf("image %s, want %s", got, tt.image)
			}
			conf := a.ConfigMap.Data[ConfigKey]
			if !strings.Contains(conf, tt.inConf) || strings.HasSuffix(conf, "\n") {
				t.Errorf("config.conf lacks %q or ends with a newline:\n%s", tt.inConf, conf)
			}
		})
	}
}

func TestBuildWithoutProxyConfiguration(t *testing.T) {
	cfg := loadConfig(t, "default")
	cfg.ComponentConfigs.KubeProxy = nil
	if _, err := Build(cfg); err == nil {
		t.Error("Build without a KubeProxyConfiguration succeeded")
	}
}

// TestDataHash checks the digest against upstream's for
// testdata/configs/default.yaml: the annotation upstream kubeadm v1.36.3
// put on the ConfigMap matched this digest of the data it printed, and
// upstream v1.37.2 prints (with mode: iptables) data whose digest is this.
func TestDataHash(t *testing.T) {
	a, err := Build(loadConfig(t, "default"))
	if err != nil {
		t.Fatal(err)
	}
	const upstream = "sha256:1550f6b91872603e46afc2ce9136036efa05cf2166ad10947f849d111cdba163"
	if got := DataHash(a.ConfigMap); got != upstream {
		t.Errorf("DataHash = %s, want upstream's %s", got, upstream)
	}
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want string
	}{
		// sha256 of nothing.
		{"empty", corev1.ConfigMap{}, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		// sha256("ab"): values in key order, then binary data.
		{"order", corev1.ConfigMap{Data: map[string]string{"z": "b"}, BinaryData: map[string][]byte{"a": nil}}, "sha256:fb8e20fc2e4c3f248c60c39bd652f3c1347298bb977b8b4d5903b85055620603"},
	}
	tests[1].cm.Data["a"] = "a"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DataHash(&tt.cm); got != tt.want {
				t.Errorf("DataHash = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	a, err := Build(loadConfig(t, "default"))
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	stale := a.ConfigMap.DeepCopy()
	stale.Data[ConfigKey] = "# changed by hand"
	if _, err := cs.CoreV1().ConfigMaps(Namespace).Create(ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		if err := Apply(ctx, cs, a); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	if a.ConfigMap.Annotations != nil {
		t.Error("Apply changed the Addon it was given")
	}
	cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[ConfigKey] != a.ConfigMap.Data[ConfigKey] {
		t.Errorf("the changed config.conf was not replaced")
	}
	if got, want := cm.Annotations[HashAnnotation], DataHash(a.ConfigMap); got != want {
		t.Errorf("hash annotation %q, want %q", got, want)
	}
	for _, get := range []func() error{
		func() error {
			_, err := cs.AppsV1().DaemonSets(Namespace).Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(Namespace).Get(ctx, Name, metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, NodeProxierBinding, metav1.GetOptions{})
			return err
		},
		func() error { _, err := cs.RbacV1().Roles(Namespace).Get(ctx, Name, metav1.GetOptions{}); return err },
		func() error {
			_, err := cs.RbacV1().RoleBindings(Namespace).Get(ctx, Name, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Error(err)
		}
	}
}

// TestApplyUserSupplied checks that a KubeProxyConfiguration the user gave
// is stored without the hash annotation: it marks only what kubeadm
// generated, and an upgrade replaces what it marks with new defaults.
func TestApplyUserSupplied(t *testing.T) {
	ctx := context.Background()
	cfg := loadConfig(t, "default")
	cfg.ComponentConfigs.KubeProxyUserSupplied = true
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	if err := Apply(ctx, cs, a); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := cm.Annotations[HashAnnotation]; ok {
		t.Errorf("a user's configuration carries the hash annotation %q", v)
	}
}

func TestKubeconfigThroughNodeLocalBalancer(t *testing.T) {
	kc, err := clientcmd.Load([]byte(balancerKubeconfig()))
	if err != nil {
		t.Fatalf("the balancer's kubeconfig does not parse: %v", err)
	}
	c := kc.Clusters["default"]
	if c == nil || c.Server != "https://127.0.0.1:7445" || c.TLSServerName != "kubernetes" || c.CertificateAuthority != serviceAccountCA {
		t.Fatalf("cluster = %+v; want the balancer's address, server name kubernetes and the service-account CA", c)
	}
}
