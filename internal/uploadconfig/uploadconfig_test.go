package uploadconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
)

// The testdata/<name>.upstream-*.yaml files are what upstream kubeadm
// v1.36.3 stored in the two ConfigMaps for testdata/<name>.yaml
// ("kubeadm init phase upload-config all" against a real API server).
// For the default configuration it annotated kubelet-config with
// upstreamDefaultHash; for the custom one, whose KubeletConfiguration the
// user gives, with nothing.
const upstreamDefaultHash = "sha256:26488e9fc7c5cb5fdda9996cda2e6651a9af5febce07ea02de11bd3ef3f49e9c"

func loadConfig(t *testing.T, name string) *kubeadm.InitConfiguration {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return configtest.InitConfiguration(t, string(b), "10.199.0.2")
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfigMapsMatchUpstream(t *testing.T) {
	tests := []struct {
		name     string
		wantHash string // "" = no annotation
	}{
		{"default", upstreamDefaultHash},
		{"custom", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadConfig(t, tt.name)
			cm, err := KubeadmConfig(&cfg.ClusterConfiguration)
			if err != nil {
				t.Fatal(err)
			}
			if cm.Name != "kubeadm-config" || cm.Namespace != "kube-system" || len(cm.Data) != 1 {
				t.Errorf("kubeadm-config: %s/%s with %d keys", cm.Namespace, cm.Name, len(cm.Data))
			}
			if got, want := cm.Data["ClusterConfiguration"], golden(t, tt.name+".upstream-kubeadm-config.yaml"); got != want {
				t.Errorf("ClusterConfiguration:\n%s\nupstream stores:\n%s", got, want)
			}

			cm, err = KubeletConfig(&cfg.ClusterConfiguration)
			if err != nil {
				t.Fatal(err)
			}
			if cm.Name != "kubelet-config" || cm.Namespace != "kube-system" || len(cm.Data) != 1 {
				t.Errorf("kubelet-config: %s/%s with %d keys", cm.Namespace, cm.Name, len(cm.Data))
			}
			if got, want := cm.Data["kubelet"], golden(t, tt.name+".upstream-kubelet-config.yaml"); got != want {
				t.Errorf("kubelet:\n%s\nupstream stores:\n%s", got, want)
			}
			if got := cm.Annotations[ComponentConfigHashAnnotation]; got != tt.wantHash {
				t.Errorf("hash annotation %q, want %q", got, tt.wantHash)
			}
			if tt.wantHash == "" && cm.Annotations != nil {
				t.Errorf("annotations %v, want none", cm.Annotations)
			}
		})
	}
}

func TestChecksum(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want string
	}{
		{"one key", corev1.ConfigMap{Data: map[string]string{"kubelet": "a: 1\n"}}, sum("a: 1\n")},
		{"keys in order", corev1.ConfigMap{Data: map[string]string{"b": "2", "a": "1"}}, sum("12")},
		{"binary after text", corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"z": []byte("9")}}, sum("19")},
		{"empty", corev1.ConfigMap{}, sum("")},
	}
	for _, tt := range tests {
		if got := Checksum(&tt.cm); got != tt.want {
			t.Errorf("%s: Checksum = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestKubeletConfigNeedsOne(t *testing.T) {
	if _, err := KubeletConfig(&kubeadm.ClusterConfiguration{}); err == nil {
		t.Error("KubeletConfig without a KubeletConfiguration succeeded")
	}
}

func TestRBAC(t *testing.T) {
	type subject struct{ Kind, Name string }
	tests := []struct {
		name          string
		role          *rbacv1.Role
		binding       *rbacv1.RoleBinding
		wantName      string
		wantConfigMap string
		wantSubjects  []subject
	}{
		{"kubeadm-config", nil, nil, "kubeadm:nodes-kubeadm-config", "kubeadm-config",
			[]subject{{"Group", "system:bootstrappers:kubeadm:default-node-token"}, {"Group", "system:nodes"}}},
		{"kubelet-config", nil, nil, "kubeadm:kubelet-config", "kubelet-config",
			[]subject{{"Group", "system:nodes"}, {"Group", "system:bootstrappers:kubeadm:default-node-token"}}},
	}
	tests[0].role, tests[0].binding = KubeadmConfigRBAC()
	tests[1].role, tests[1].binding = KubeletConfigRBAC()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{tt.wantConfigMap}, Verbs: []string{"get"}}}
			if tt.role.Name != tt.wantName || tt.role.Namespace != "kube-system" || !reflect.DeepEqual(tt.role.Rules, wantRules) {
				t.Errorf("Role %s/%s %+v", tt.role.Namespace, tt.role.Name, tt.role.Rules)
			}
			wantRef := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: tt.wantName}
			if tt.binding.Name != tt.wantName || tt.binding.Namespace != "kube-system" || tt.binding.RoleRef != wantRef {
				t.Errorf("RoleBinding %s/%s -> %+v", tt.binding.Namespace, tt.binding.Name, tt.binding.RoleRef)
			}
			var got []subject
			for _, s := range tt.binding.Subjects {
				got = append(got, subject{s.Kind, s.Name})
			}
			if !reflect.DeepEqual(got, tt.wantSubjects) {
				t.Errorf("subjects %v, want %v (upstream's order)", got, tt.wantSubjects)
			}
		})
	}
}

func TestUploadConverges(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	def := loadConfig(t, "default")
	custom := loadConfig(t, "custom")
	for i, cfg := range []*kubeadm.InitConfiguration{def, def, custom} {
		if err := UploadKubeadmConfig(ctx, c, &cfg.ClusterConfiguration); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if err := UploadKubeletConfig(ctx, c, &cfg.ClusterConfiguration); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	// The last upload (custom, user-supplied kubelet configuration) wins
	// wholly, annotation included.
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["kubelet"] != golden(t, "custom.upstream-kubelet-config.yaml") || len(cm.Annotations) != 0 {
		t.Errorf("kubelet-config after re-upload: annotations %v, data\n%s", cm.Annotations, cm.Data["kubelet"])
	}
	cm, err = c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["ClusterConfiguration"] != golden(t, "custom.upstream-kubeadm-config.yaml") {
		t.Errorf("kubeadm-config after re-upload:\n%s", cm.Data["ClusterConfiguration"])
	}
	for _, name := range []string{"kubeadm:nodes-kubeadm-config", "kubeadm:kubelet-config"} {
		if _, err := c.RbacV1().Roles("kube-system").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Role %s: %v", name, err)
		}
		if _, err := c.RbacV1().RoleBindings("kube-system").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("RoleBinding %s: %v", name, err)
		}
	}
}

func TestUploadErrorsNameTheObject(t *testing.T) {
	cfg := loadConfig(t, "default")
	tests := []struct {
		resource string
		upload   func(context.Context, *fake.Clientset) error
		wantErr  string
	}{
		{"configmaps", func(ctx context.Context, c *fake.Clientset) error {
			return UploadKubeadmConfig(ctx, c, &cfg.ClusterConfiguration)
		}, "storing ConfigMap kube-system/kubeadm-config"},
		{"roles", func(ctx context.Context, c *fake.Clientset) error {
			return UploadKubeletConfig(ctx, c, &cfg.ClusterConfiguration)
		}, "storing Role kube-system/kubeadm:kubelet-config"},
		{"rolebindings", func(ctx context.Context, c *fake.Clientset) error {
			return UploadKubeadmConfig(ctx, c, &cfg.ClusterConfiguration)
		}, "storing RoleBinding kube-system/kubeadm:nodes-kubeadm-config"},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			c := fake.NewClientset()
			c.PrependReactor("create", tt.resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: tt.resource}, "x", errors.New("test refusal"))
			})
			err := tt.upload(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !apierrors.IsForbidden(err) {
				t.Errorf("error %v, want a Forbidden error containing %q", err, tt.wantErr)
			}
		})
	}
}
