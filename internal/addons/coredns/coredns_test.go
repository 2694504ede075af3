package coredns

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
			a, err := Build(&loadConfig(t, name).ClusterConfiguration)
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
		name                   string
		cfg                    string
		wantIP, wantImg, inCfg string
	}{
		{"default", "default", "10.96.0.10", "registry.k8s.io/coredns/coredns:v1.14.6", "kubernetes cluster.local in-addr.arpa"},
		{"custom domain, subnet and image", "custom", "10.100.0.10", "dns.registry/x/coredns:v9.9.9", "disable denial corp.example"},
		{"dual-stack takes the first subnet", "ipv6", "fd00:10:96::a", "registry.k8s.io/coredns/coredns:v1.14.6", "cache 30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Build(&loadConfig(t, tt.cfg).ClusterConfiguration)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Service.Spec.ClusterIP; got != tt.wantIP {
				t.Errorf("clusterIP %s, want %s", got, tt.wantIP)
			}
			if got := a.Deployment.Spec.Template.Spec.Containers[0].Image; got != tt.wantImg {
				t.Errorf("image %s, want %s", got, tt.wantImg)
			}
			if !strings.Contains(a.ConfigMap.Data[CorefileKey], tt.inCfg) {
				t.Errorf("Corefile lacks %q:\n%s", tt.inCfg, a.ConfigMap.Data[CorefileKey])
			}
		})
	}
}

func TestBuildRejectsBadSubnet(t *testing.T) {
	c := &kubeadm.ClusterConfiguration{}
	c.Networking.ServiceSubnet = "not-a-cidr"
	config.ParseAddresses(c)
	if _, err := Build(c); err == nil || !strings.Contains(err.Error(), "not-a-cidr") {
		t.Errorf("Build with a bad service subnet: %v", err)
	}
}

func TestCustomized(t *testing.T) {
	def := Corefile("cluster.local")
	tests := []struct {
		name     string
		corefile string
		want     bool
	}{
		{"empty", "", false},
		{"blank", " \n\t\n", false},
		{"default", def, false},
		{"default, reindented", strings.ReplaceAll(def, "    ", "\t") + "\n\n", false},
		{"no server block", "# custom\n", false},
		{"default of another domain", Corefile("corp.example"), true},
		{"extra plugin", strings.Replace(def, "errors", "errors\n    log", 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := customized(tt.corefile, "cluster.local"); got != tt.want {
				t.Errorf("customized = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	a, err := Build(&loadConfig(t, "default").ClusterConfiguration)
	if err != nil {
		t.Fatal(err)
	}
	custom := strings.Replace(a.ConfigMap.Data[CorefileKey], "errors", "errors\n    log", 1)
	five := int32(5)
	tests := []struct {
		name         string
		existing     []corev1.ConfigMap
		deployments  []appsv1.Deployment
		wantCorefile string
		wantReplicas int32
	}{
		{name: "new cluster", wantCorefile: a.ConfigMap.Data[CorefileKey], wantReplicas: DefaultReplicas},
		{
			name:         "customized Corefile and scaled Deployment are kept",
			existing:     []corev1.ConfigMap{*configMap(custom)},
			deployments:  []appsv1.Deployment{*withReplicas(a.Deployment, &five)},
			wantCorefile: custom,
			wantReplicas: 5,
		},
		{
			name: "taking over from kube-dns: its stub domains and upstream servers",
			existing: []corev1.ConfigMap{
				*configMap(a.ConfigMap.Data[CorefileKey]),
				kubeDNSConfigMap(`{"corp.example": ["10.0.0.53", "10.0.0.54:5353"]}`, `["192.0.2.1"]`),
			},
			deployments:  []appsv1.Deployment{kubeDNSDeployment()},
			wantCorefile: strings.Replace(a.ConfigMap.Data[CorefileKey], "forward . /etc/resolv.conf", "forward . 192.0.2.1", 1) + "corp.example:53 {\n    errors\n    cache 30\n    loop\n    forward . 10.0.0.53 10.0.0.54:5353\n}\n",
			wantReplicas: DefaultReplicas,
		},
		{
			name:         "kube-dns's ConfigMap left behind once kube-dns is gone is not read",
			existing:     []corev1.ConfigMap{kubeDNSConfigMap(`{"corp.example": ["10.0.0.53"]}`, "")},
			wantCorefile: a.ConfigMap.Data[CorefileKey],
			wantReplicas: DefaultReplicas,
		},
		{
			name:         "a customized Corefile wins over kube-dns's configuration",
			existing:     []corev1.ConfigMap{*configMap(custom), kubeDNSConfigMap(`{"corp.example": ["10.0.0.53"]}`, "")},
			deployments:  []appsv1.Deployment{kubeDNSDeployment()},
			wantCorefile: custom,
			wantReplicas: DefaultReplicas,
		},
		{
			name:         "a Corefile without server block is replaced",
			existing:     []corev1.ConfigMap{*configMap("# custom\n")},
			wantCorefile: a.ConfigMap.Data[CorefileKey],
			wantReplicas: DefaultReplicas,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for i := range tt.existing {
				if _, err := cs.CoreV1().ConfigMaps(Namespace).Create(ctx, &tt.existing[i], metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tt.deployments {
				if _, err := cs.AppsV1().Deployments(Namespace).Create(ctx, &tt.deployments[i], metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			before := a.Deployment.DeepCopy()
			for run := 1; run <= 2; run++ {
				if err := Apply(ctx, cs, a); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
			if *a.Deployment.Spec.Replicas != *before.Spec.Replicas {
				t.Errorf("Apply changed the Addon it was given")
			}
			cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := cm.Data[CorefileKey]; got != tt.wantCorefile {
				t.Errorf("Corefile:\n%s\nwant:\n%s", got, tt.wantCorefile)
			}
			d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *d.Spec.Replicas; got != tt.wantReplicas {
				t.Errorf("replicas %d, want %d", got, tt.wantReplicas)
			}
			for _, get := range []func() error{
				func() error {
					_, err := cs.CoreV1().ServiceAccounts(Namespace).Get(ctx, Name, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := cs.RbacV1().ClusterRoles().Get(ctx, ClusterRoleName, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, ClusterRoleName, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().Services(Namespace).Get(ctx, ServiceName, metav1.GetOptions{})
					return err
				},
			} {
				if err := get(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func kubeDNSConfigMap(stubDomains, upstreams string) corev1.ConfigMap {
	data := map[string]string{}
	if stubDomains != "" {
		data["stubDomains"] = stubDomains
	}
	if upstreams != "" {
		data["upstreamNameservers"] = upstreams
	}
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: KubeDNSName, Namespace: Namespace}, Data: data}
}

func kubeDNSDeployment() appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: KubeDNSName, Namespace: Namespace, Labels: map[string]string{LabelKey: LabelValue}}}
}

// TestFromKubeDNS: what kube-dns's ConfigMap may hold, translated or
// refused with the key named; nothing unchecked reaches the Corefile.
func TestFromKubeDNS(t *testing.T) {
	def := Corefile("cluster.local")
	tests := []struct {
		name    string
		data    map[string]string
		want    string // "" with ok false
		wantErr string
	}{
		{name: "empty", data: nil},
		{name: "empty values", data: map[string]string{"stubDomains": " ", "upstreamNameservers": ""}},
		{name: "empty JSON", data: map[string]string{"stubDomains": "{}", "upstreamNameservers": "[]"}},
		{
			name: "two domains, sorted, trailing dot dropped, IPv6",
			data: map[string]string{"stubDomains": `{"z.example.": ["fd00::53"], "a.example": ["[fd00::54]:5353"]}`},
			want: def + "a.example:53 {\n    errors\n    cache 30\n    loop\n    forward . [fd00::54]:5353\n}\n" +
				"z.example:53 {\n    errors\n    cache 30\n    loop\n    forward . fd00::53\n}\n",
		},
		{
			name: "upstreams only",
			data: map[string]string{"upstreamNameservers": `["8.8.8.8", "8.8.4.4"]`},
			want: strings.Replace(def, "forward . /etc/resolv.conf", "forward . 8.8.8.8 8.8.4.4", 1),
		},
		{name: "bad JSON", data: map[string]string{"stubDomains": `{"a": `}, wantErr: "key stubDomains"},
		{name: "bad upstream", data: map[string]string{"upstreamNameservers": `["dns.example"]`}, wantErr: "key upstreamNameservers[0]"},
		{name: "domain injecting a block", data: map[string]string{"stubDomains": `{"a {\n}\nb": ["10.0.0.1"]}`}, wantErr: "not a DNS name"},
		{name: "server injecting", data: map[string]string{"stubDomains": `{"a.example": ["10.0.0.1\n}"]}`}, wantErr: `domain "a.example"`},
		{name: "domain without server", data: map[string]string{"stubDomains": `{"a.example": []}`}, wantErr: "no name server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := FromKubeDNS("cluster.local", tt.data)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "kube-system/kube-dns") {
					t.Fatalf("error %v, want one naming kube-system/kube-dns and %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case ok != (tt.want != "") || got != tt.want:
				t.Errorf("FromKubeDNS = %v\n%s\nwant:\n%s", ok, got, tt.want)
			}
		})
	}
}

func withReplicas(d *appsv1.Deployment, n *int32) *appsv1.Deployment {
	d = d.DeepCopy()
	d.Spec.Replicas = n
	return d
}

// TestPatchDeployment: the Deployment is patched when printed and when
// applied, after the existing replica count is taken over, so a patch's
// count wins; a failing patch applies nothing.
func TestPatchDeployment(t *testing.T) {
	ctx := context.Background()
	a, err := Build(&loadConfig(t, "default").ClusterConfiguration)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int32
	a.PatchDeployment = func(d *appsv1.Deployment) (*appsv1.Deployment, error) {
		seen = append(seen, *d.Spec.Replicas)
		p := d.DeepCopy()
		seven := int32(7)
		p.Spec.Replicas = &seven
		return p, nil
	}
	out, err := a.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "replicas: 7\n") {
		t.Errorf("the printed Deployment is not patched:\n%s", out)
	}

	three := int32(3)
	cs := fake.NewClientset(withReplicas(a.Deployment, &three))
	if err := Apply(ctx, cs, a); err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 7 || seen[len(seen)-1] != 3 {
		t.Errorf("replicas %d, patch saw %v; want 7 after a patch that saw the kept 3", *d.Spec.Replicas, seen)
	}

	a.PatchDeployment = func(*appsv1.Deployment) (*appsv1.Deployment, error) { return nil, errors.New("bad patch") }
	cs = fake.NewClientset()
	if err := Apply(ctx, cs, a); err == nil || !strings.Contains(err.Error(), "patching the coredns Deployment: bad patch") {
		t.Fatalf("Apply = %v, want the patch's error", err)
	}
	for _, act := range cs.Actions() {
		if act.GetVerb() != "get" && act.GetVerb() != "list" {
			t.Errorf("a failing patch still wrote: %v", act)
		}
	}
}
