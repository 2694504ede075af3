package etcd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"k8s.io/client-go/kubernetes/fake"
)

func TestParseClientURLs(t *testing.T) {
	tests := []struct {
		value   string
		want    []string
		wantErr string
	}{
		{value: "https://10.0.0.1:2379", want: []string{"https://10.0.0.1:2379"}},
		{value: " https://10.0.0.1:2379 , https://[fd00::1]:2379,", want: []string{"https://10.0.0.1:2379", "https://[fd00::1]:2379"}},
		{value: "http://node-a:2379", want: []string{"http://node-a:2379"}},
		{value: "", wantErr: "no URL"},
		{value: " , ", wantErr: "no URL"},
		{value: "10.0.0.1:2379", wantErr: "scheme"},
		{value: "unix://etcd.sock:2379", wantErr: "scheme"},
		{value: "https://10.0.0.1", wantErr: "host and a port"},
		{value: "https://:2379", wantErr: "host and a port"},
		{value: "https://10.0.0.1:2379/v3", wantErr: "only a scheme"},
		{value: "https://10.0.0.1:2379?x=1", wantErr: "only a scheme"},
		{value: "https://u:p@10.0.0.1:2379", wantErr: "only a scheme"},
		{value: "https://10.0.0.1:2379,ftp://x:1", wantErr: "scheme"},
		{value: "https://%zz:2379", wantErr: "etcd URL"},
	}
	for _, tt := range tests {
		got, err := ParseClientURLs(tt.value)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseClientURLs(%q) = %v, %v; want an error with %q", tt.value, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseClientURLs(%q) = %v, %v; want %v", tt.value, got, err, tt.want)
		}
	}
}

func TestSameURL(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://10.0.0.1:2380", "https://10.0.0.1:2380", true},
		{"https://10.0.0.1:2380", "HTTPS://10.0.0.1:2380/", true},
		{"https://[fd00::1]:2380", "https://[fd00:0::1]:2380", true},
		{"https://[::ffff:10.0.0.1]:2380", "https://10.0.0.1:2380", true},
		{"https://Node-A:2380", "https://node-a:2380", true},
		{"https://10.0.0.1:2380", "http://10.0.0.1:2380", false},
		{"https://10.0.0.1:2380", "https://10.0.0.1:2381", false},
		{"https://10.0.0.1:2380", "https://10.0.0.2:2380", false},
	}
	for _, tt := range tests {
		if got := sameURL(tt.a, tt.b); got != tt.want {
			t.Errorf("sameURL(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func etcdPod(name string, annotations map[string]string, labels map[string]string) *corev1.Pod {
	if labels == nil {
		labels = map[string]string{"component": "etcd", "tier": "control-plane"}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: metav1.NamespaceSystem, Labels: labels, Annotations: annotations,
	}}
}

func TestClientURLs(t *testing.T) {
	ann := func(v string) map[string]string { return map[string]string{ClientURLsAnnotation: v} }
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		want    []string
		wantErr string
	}{
		{
			name: "one URL per Pod, ordered by Pod name, duplicates dropped",
			pods: []*corev1.Pod{
				etcdPod("etcd-cp-b", ann("https://10.0.0.2:2379"), nil),
				etcdPod("etcd-cp-a", ann("https://10.0.0.1:2379"), nil),
				etcdPod("etcd-cp-c", ann("https://10.0.0.1:2379,https://10.0.0.3:2379"), nil),
			},
			want: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"},
		},
		{
			name: "Pods of other components or namespaces are ignored",
			pods: []*corev1.Pod{
				etcdPod("etcd-cp-a", ann("https://10.0.0.1:2379"), nil),
				etcdPod("kube-apiserver-cp-a", ann("https://10.9.9.9:2379"), map[string]string{"component": "kube-apiserver", "tier": "control-plane"}),
				etcdPod("etcd-user", ann("https://10.9.9.8:2379"), map[string]string{"component": "etcd"}),
				func() *corev1.Pod {
					p := etcdPod("etcd-elsewhere", ann("https://10.9.9.7:2379"), nil)
					p.Namespace = "default"
					return p
				}(),
			},
			want: []string{"https://10.0.0.1:2379"},
		},
		{
			name:    "no Pod",
			wantErr: "no etcd Pod",
		},
		{
			name:    "a Pod without the annotation",
			pods:    []*corev1.Pod{etcdPod("etcd-cp-a", ann("https://10.0.0.1:2379"), nil), etcdPod("etcd-cp-b", nil, nil)},
			wantErr: "kube-system/etcd-cp-b has no kubeadm.kubernetes.io/etcd.advertise-client-urls annotation",
		},
		{
			name:    "a bad URL",
			pods:    []*corev1.Pod{etcdPod("etcd-cp-a", ann("10.0.0.1:2379"), nil)},
			wantErr: "etcd-cp-a: annotation",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, p := range tt.pods {
				if _, err := cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ClientURLs(context.Background(), cs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ClientURLs = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("ClientURLs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// The annotation our etcd manifests carry (the golden ones of staticpod)
// is what ClientURLs reads.
func TestClientURLsOfOurManifests(t *testing.T) {
	for dir, want := range map[string]string{
		"default": "https://10.0.0.5:2379",
		"ipv6":    "https://[fd00::5]:2379",
	} {
		data, err := os.ReadFile(filepath.Join("..", "staticpod", "testdata", dir, "etcd.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if err := yaml.Unmarshal(data, &pod); err != nil {
			t.Fatal(err)
		}
		pod.Name = "etcd-node"
		got, err := ClientURLs(context.Background(), fake.NewClientset(&pod))
		if err != nil || !slices.Equal(got, []string{want}) {
			t.Errorf("ClientURLs of testdata/%s/etcd.yaml = %v, %v; want [%s]", dir, got, err, want)
		}
	}
}

func TestDefaultCertFiles(t *testing.T) {
	ca, cert, key := DefaultCertFiles("/etc/kubernetes/pki")
	if ca != "/etc/kubernetes/pki/etcd/ca.crt" || cert != "/etc/kubernetes/pki/apiserver-etcd-client.crt" || key != "/etc/kubernetes/pki/apiserver-etcd-client.key" {
		t.Errorf("DefaultCertFiles = %s, %s, %s", ca, cert, key)
	}
}

func TestStackedClientURLs(t *testing.T) {
	no := false
	slice := func(name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"kubernetes.io/service-name": "kubernetes"}},
			Endpoints:  eps,
		}
	}
	c := fake.NewClientset(
		slice("kubernetes", discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}}, discoveryv1.Endpoint{Addresses: []string{"fd00::2"}},
			discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}}),
		slice("kubernetes-x", discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}}),
	)
	got, err := StackedClientURLs(context.Background(), c)
	want := []string{"https://10.0.0.1:2379", "https://[fd00::2]:2379"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if _, err := StackedClientURLs(context.Background(), fake.NewClientset()); err == nil {
		t.Errorf("no endpoint gave no error")
	}
}
