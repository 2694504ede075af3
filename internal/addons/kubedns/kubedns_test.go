package kubedns

import (
	"bytes"
	"context"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

func cluster(mod func(*kubeadm.ClusterConfiguration)) *kubeadm.ClusterConfiguration {
	c := &kubeadm.ClusterConfiguration{
		KubernetesVersion: "v1.36.3",
		ImageRepository:   "registry.k8s.io",
		FeatureGates:      map[string]bool{"CoreDNS": false},
	}
	c.Networking.ServiceSubnet = "10.96.0.0/12"
	c.Networking.DNSDomain = "cluster.local"
	if mod != nil {
		mod(c)
	}
	// As defaulting parses it.
	if p, err := netip.ParsePrefix(c.Networking.ServiceSubnet); err == nil {
		c.Subnets.Service = []netip.Prefix{p}
	}
	return c
}

func TestGolden(t *testing.T) {
	a, err := Build(cluster(nil))
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "default.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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
}

func TestBuildValues(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*kubeadm.ClusterConfiguration)
		wantIP  string
		wantImg string
		args    []string // in the dnsmasq or sidecar arguments
	}{
		{"defaults", nil, "10.96.0.10", "registry.k8s.io/dns/k8s-dns-kube-dns:1.26.7",
			[]string{"--server=/cluster.local/127.0.0.1#10053", "--probe=dnsmasq,127.0.0.1:53,kubernetes.default.svc.cluster.local,5,SRV"}},
		{"IPv6: the Pod's loopback is ::1", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.ServiceSubnet, c.Networking.DNSDomain = "fd00:10:96::/112", "corp.example"
			c.ImageRepository = "mirror.example/k8s"
		}, "fd00:10:96::a", "mirror.example/k8s/k8s-dns-kube-dns:1.26.7",
			[]string{"--server=/corp.example/::1#10053", "--server=/ip6.arpa/::1#10053", "--probe=kubedns,[::1]:10053,kubernetes.default.svc.corp.example,5,SRV"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Build(cluster(tt.mod))
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Service.Spec.ClusterIP; got != tt.wantIP {
				t.Errorf("clusterIP %s, want %s", got, tt.wantIP)
			}
			cs := a.Deployment.Spec.Template.Spec.Containers
			if got := cs[0].Image; got != tt.wantImg {
				t.Errorf("image %s, want %s", got, tt.wantImg)
			}
			all := strings.Join(append(append([]string(nil), cs[1].Args...), cs[2].Args...), " ")
			for _, arg := range tt.args {
				if !strings.Contains(all, arg) {
					t.Errorf("no %q among %s", arg, all)
				}
			}
		})
	}
	if _, err := Build(cluster(func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "nope" })); err == nil {
		t.Error("Build with a bad service subnet succeeded")
	}
}

// TestApply: a new cluster gets every object; the user's ConfigMap and the
// replica count of the DNS Deployment found (CoreDNS's here) are kept; a
// second run changes nothing; a nil Service is left out.
func TestApply(t *testing.T) {
	ctx := context.Background()
	a, err := Build(cluster(nil))
	if err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	userCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace},
		Data: map[string]string{"stubDomains": `{"corp.example": ["10.0.0.53"]}`}}
	core := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: Namespace, Labels: map[string]string{LabelKey: LabelValue}},
		Spec: appsv1.DeploymentSpec{Replicas: &three}}
	cs := fake.NewClientset(userCM, core)
	noService := *a
	noService.Service = nil
	if err := Apply(ctx, cs, &noService); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(Namespace).Get(ctx, ServiceName, metav1.GetOptions{}); err == nil {
		t.Error("the Service was written though left out")
	}
	for run := 1; run <= 2; run++ {
		if err := Apply(ctx, cs, a); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil || cm.Data["stubDomains"] == "" {
		t.Errorf("the user's ConfigMap was not kept: %v %v", cm, err)
	}
	d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 || *a.Deployment.Spec.Replicas != DefaultReplicas {
		t.Errorf("replicas %d, want the 3 of the DNS Deployment found (and the Addon unchanged)", *d.Spec.Replicas)
	}
	if _, err := cs.CoreV1().Services(Namespace).Get(ctx, ServiceName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
}
