package initphases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
)

const apiPhasesTestConfig = `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.0.0.5
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`

// apiPhaseData returns data whose API client is a fake clientset holding
// objs, and whose certificate folder holds fake files for upload-certs.
func apiPhaseData(t *testing.T, config string, objs ...corev1.Node) (*Data, *fake.Clientset, *bytes.Buffer) {
	t.Helper()
	cfg := configtest.InitConfiguration(t, config, "10.0.0.5")
	c := fake.NewClientset()
	for i := range objs {
		if err := c.Tracker().Add(&objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	out := &bytes.Buffer{}
	d := &Data{
		Cfg:       cfg,
		CertDir:   t.TempDir(),
		Out:       out,
		Now:       func() time.Time { return time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC) },
		NewClient: func(context.Context) (kubernetes.Interface, error) { return c, nil },
	}
	for _, f := range copycerts.Files(d.CertDir, cfg.Etcd) {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, []byte(f.Key), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d, c, out
}

func TestUploadConfigPhase(t *testing.T) {
	d, c, out := apiPhaseData(t, apiPhasesTestConfig)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := runUploadKubeadmConfig(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := runUploadKubeletConfig(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"kubeadm-config", "kubelet-config"} {
		if _, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}
	want := `[upload-config] Storing the cluster configuration in ConfigMap "kubeadm-config" in namespace "kube-system"
[kubelet] Storing the configuration all kubelets share in ConfigMap "kubelet-config" in namespace "kube-system"
`
	if out.String() != want+want {
		t.Errorf("output:\n%s\nwant twice:\n%s", out, want)
	}
}

func TestUploadCertsPhase(t *testing.T) {
	ctx := context.Background()
	t.Run("skipped without --upload-certs", func(t *testing.T) {
		d, c, out := apiPhaseData(t, apiPhasesTestConfig)
		if err := runUploadCerts(ctx, d); err != nil {
			t.Fatal(err)
		}
		if len(c.Actions()) != 0 || d.Cfg.CertificateKey != "" {
			t.Errorf("API calls %v, key %q: want none", c.Actions(), d.Cfg.CertificateKey)
		}
		if want := "[upload-certs] Skipping phase: the certificates are only uploaded with --upload-certs\n"; out.String() != want {
			t.Errorf("output %q, want %q", out, want)
		}
	})
	t.Run("a key is made, recorded and printed", func(t *testing.T) {
		d, c, out := apiPhaseData(t, apiPhasesTestConfig)
		d.UploadCerts = true
		if err := runUploadCerts(ctx, d); err != nil {
			t.Fatal(err)
		}
		key := d.Cfg.CertificateKey
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(key) {
			t.Fatalf("Cfg.CertificateKey = %q, want a new key", key)
		}
		want := "[upload-certs] Storing the encrypted control-plane certificates in Secret \"kubeadm-certs\" in namespace \"kube-system\"\n" +
			"[upload-certs] Using certificate key:\n" + key + "\n"
		if out.String() != want {
			t.Errorf("output:\n%s\nwant:\n%s", out, want)
		}
		s, err := c.CoreV1().Secrets("kube-system").Get(ctx, "kubeadm-certs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := copycerts.Open(s, key)
		if err != nil {
			t.Fatal(err)
		}
		if string(plain["etcd-ca.key"]) != "etcd-ca.key" {
			t.Errorf("etcd-ca.key decrypts to %q", plain["etcd-ca.key"])
		}
	})
	t.Run("the given key is used and not printed with --skip-certificate-key-print", func(t *testing.T) {
		const key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
		d, c, out := apiPhaseData(t, apiPhasesTestConfig)
		d.UploadCerts, d.SkipCertificateKeyPrint, d.Cfg.CertificateKey = true, true, key
		if err := runUploadCerts(ctx, d); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), key) || strings.Contains(out.String(), "Using certificate key") {
			t.Errorf("output shows the key: %q", out)
		}
		s, err := c.CoreV1().Secrets("kube-system").Get(ctx, "kubeadm-certs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := copycerts.Open(s, key); err != nil {
			t.Errorf("the Secret does not open with the given key: %v", err)
		}
	})
	t.Run("an external CA is refused before any API call", func(t *testing.T) {
		d, c, _ := apiPhaseData(t, apiPhasesTestConfig)
		d.UploadCerts = true
		if err := os.Remove(filepath.Join(d.CertDir, "ca.key")); err != nil {
			t.Fatal(err)
		}
		if err := runUploadCerts(ctx, d); err == nil || !strings.Contains(err.Error(), "external CA") {
			t.Errorf("error %v", err)
		}
		if len(c.Actions()) != 0 {
			t.Errorf("API calls %v", c.Actions())
		}
	})
}

func TestMarkControlPlanePhase(t *testing.T) {
	ctx := context.Background()
	registered := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{"kubernetes.io/hostname": "node1"}}}
	tests := []struct {
		name       string
		extraInit  string
		wantOut    string
		wantTaints []corev1.Taint
	}{
		{
			name: "default taint",
			wantOut: "[mark-control-plane] Marking node node1 as a control-plane node with the labels [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]\n" +
				"[mark-control-plane] Marking node node1 as a control-plane node with the taints [node-role.kubernetes.io/control-plane:NoSchedule]\n",
			wantTaints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
		},
		{
			name:      "no taints",
			extraInit: "  taints: []\n",
			wantOut:   "[mark-control-plane] Marking node node1 as a control-plane node with the labels [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]\n",
		},
		{
			name:      "custom taints",
			extraInit: "  taints:\n  - key: example.com/foo\n    value: bar\n    effect: NoExecute\n  - key: example.com/bare\n    effect: PreferNoSchedule\n",
			wantOut: "[mark-control-plane] Marking node node1 as a control-plane node with the labels [node-role.kubernetes.io/control-plane node.kubernetes.io/exclude-from-external-load-balancers]\n" +
				"[mark-control-plane] Marking node node1 as a control-plane node with the taints [example.com/foo=bar:NoExecute example.com/bare:PreferNoSchedule]\n",
			wantTaints: []corev1.Taint{
				{Key: "example.com/foo", Value: "bar", Effect: corev1.TaintEffectNoExecute},
				{Key: "example.com/bare", Effect: corev1.TaintEffectPreferNoSchedule},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := strings.Replace(apiPhasesTestConfig, "  name: node1\n", "  name: node1\n"+tt.extraInit, 1)
			d, c, out := apiPhaseData(t, config, registered)
			if err := runMarkControlPlane(ctx, d); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.wantOut)
			}
			n, err := c.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Labels["node-role.kubernetes.io/control-plane"] != "" || len(n.Labels) != 3 {
				t.Errorf("labels %v", n.Labels)
			}
			if !reflect.DeepEqual(n.Spec.Taints, tt.wantTaints) {
				t.Errorf("taints %v, want %v", n.Spec.Taints, tt.wantTaints)
			}
		})
	}
}

// TestMarkControlPlaneDryRun: "init --dry-run" has no cluster and so no
// Node; the Node its kubelet would have registered stands in, and the
// phase shows its patch at once instead of waiting out its timeout.
func TestMarkControlPlaneDryRun(t *testing.T) {
	d, c, out := apiPhaseData(t, apiPhasesTestConfig)
	d.DryRun = true
	d.NewClient = nil // as "init --dry-run" leaves it
	d.Cfg.Timeouts.KubernetesAPICall = &metav1.Duration{Duration: 100 * time.Millisecond}
	if err := runMarkControlPlane(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Actions()); n != 0 {
		t.Errorf("the dry run made %d calls", n)
	}
	want := "[dryrun] Would perform action GET on resource \"nodes\" in API group \"core/v1\"\n" +
		"[dryrun] Resource name \"node1\", namespace \"\"\n" +
		"[dryrun] Real object does not exist. Attempting to GET from followup reactors or from the fake client tracker\n" +
		"[dryrun] Would perform action PATCH on resource \"nodes\" in API group \"core/v1\"\n" +
		"[dryrun] Resource name \"node1\", namespace \"\"\n" +
		"[dryrun] Attached object:\n"
	got := out.String()
	if !strings.Contains(got, want) || !strings.Contains(got, "    node-role.kubernetes.io/control-plane: \"\"\n") || !strings.Contains(got, "  - effect: NoSchedule\n") {
		t.Errorf("output:\n%s\nwant it to show the patch and the patched Node:\n%s", got, want)
	}
}

func TestAPICallTimeout(t *testing.T) {
	d, _, _ := apiPhaseData(t, apiPhasesTestConfig)
	if got := apiCallTimeout(d); got != time.Minute {
		t.Errorf("default %v, want 1m", got)
	}
	d.Cfg.Timeouts.KubernetesAPICall = &metav1.Duration{Duration: 5 * time.Second}
	if got := apiCallTimeout(d); got != 5*time.Second {
		t.Errorf("configured %v, want 5s", got)
	}
}
