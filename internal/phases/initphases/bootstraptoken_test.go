package initphases

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

const phaseTestSecret = "0123456789abcdef"

// bootstrapTokenData returns phase data with an admin.conf for
// https://192.168.1.10:6443 in its kubeconfig folder, the given tokens and
// a fake cluster.
func bootstrapTokenData(t *testing.T, ids ...string) (*Data, *bytes.Buffer, *fake.Clientset) {
	t.Helper()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	key, err := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", Validity: time.Hour}, key, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	admin := &clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: "https://192.168.1.10:6443", CertificateAuthorityData: pki.EncodeCertPEM(ca)}},
		Contexts:       map[string]*clientcmdapi.Context{"admin": {Cluster: "kubernetes", AuthInfo: "admin"}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"admin": {Token: "not-a-real-credential"}},
		CurrentContext: "admin",
	}
	if err := kubeconfig.WriteFile(filepath.Join(dir, "admin.conf"), admin); err != nil {
		t.Fatal(err)
	}
	cfg := &kubeadm.InitConfiguration{}
	for _, id := range ids {
		cfg.BootstrapTokens = append(cfg.BootstrapTokens, kubeadm.BootstrapToken{
			Token:  &kubeadm.BootstrapTokenString{ID: id, Secret: phaseTestSecret},
			TTL:    &metav1.Duration{Duration: 24 * time.Hour},
			Usages: v1beta4.DefaultTokenUsages(),
			Groups: []string{v1beta4.DefaultTokenGroup},
		})
	}
	cluster := fake.NewClientset()
	out := &bytes.Buffer{}
	return &Data{
		Cfg:           cfg,
		KubeconfigDir: dir,
		Out:           out,
		Now:           func() time.Time { return now },
		NewClient:     func(context.Context) (kubernetes.Interface, error) { return cluster, nil },
	}, out, cluster
}

// upstreamBootstrapTokenLines is what upstream prints after the token line.
const upstreamBootstrapTokenLines = `[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles
[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes
[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials
[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token
[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster
[bootstrap-token] Configured RBAC rules to allow the API server kubelet client certificate to access the kubelet API
[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace
`

func TestBootstrapTokenPhaseOutput(t *testing.T) {
	tests := []struct {
		name      string
		ids       []string
		skipPrint bool
		first     string
	}{
		{"one token", []string{"abcdef"}, false, "[bootstrap-token] Using token: abcdef." + phaseTestSecret + "\n"},
		{"several tokens", []string{"abcdef", "ghijkl"}, false, "[bootstrap-token] Using tokens: [abcdef." + phaseTestSecret + " ghijkl." + phaseTestSecret + "]\n"},
		{"--skip-token-print", []string{"abcdef"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := bootstrapTokenData(t, tt.ids...)
			d.SkipTokenPrint = tt.skipPrint
			if err := runBootstrapToken(context.Background(), d); err != nil {
				t.Fatal(err)
			}
			if want := tt.first + upstreamBootstrapTokenLines; out.String() != want {
				t.Errorf("output\n%s\nwant\n%s", out, want)
			}
		})
	}
}

func TestBootstrapTokenPhaseConverges(t *testing.T) {
	ctx := context.Background()
	d, _, cluster := bootstrapTokenData(t, "abcdef")
	for run := 1; run <= 2; run++ {
		if err := runBootstrapToken(ctx, d); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	s, err := cluster.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-abcdef", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Data["expiration"]); got != "2026-03-05T05:06:07Z" {
		t.Errorf("expiration %s", got)
	}
	cm, err := cluster.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["kubeconfig"], "server: https://192.168.1.10:6443\n") {
		t.Errorf("cluster-info:\n%s", cm.Data["kubeconfig"])
	}
	crbs, _ := cluster.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if len(crbs.Items) != 5 {
		t.Errorf("%d ClusterRoleBindings, want 5", len(crbs.Items))
	}
}

func TestBootstrapTokenPhaseKubeconfigFlag(t *testing.T) {
	d, _, _ := bootstrapTokenData(t, "abcdef")
	d.KubeconfigPath = filepath.Join(t.TempDir(), "elsewhere.conf")
	err := runBootstrapToken(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "elsewhere.conf") {
		t.Errorf("error %v, want one about --kubeconfig's file", err)
	}
}

func TestBootstrapTokenPhaseDryRun(t *testing.T) {
	d, out, cluster := bootstrapTokenData(t, "abcdef")
	d.DryRun = true
	d.NewClient = nil // as "init --dry-run" leaves it: no cluster to reach
	d.KubeconfigPath = "/nonexistent/admin.conf"
	if err := runBootstrapToken(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if n := len(cluster.Actions()); n != 0 {
		t.Errorf("the dry run made %d calls", n)
	}
	for _, want := range []string{
		"[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles\n[dryrun] Would perform action GET on resource \"secrets\"",
		"[dryrun] Would perform action CREATE on resource \"configmaps\" in API group \"core/v1\"",
		"    server: https://192.168.1.10:6443\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry-run output lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "token-secret: MDEyMzQ1Njc4OWFiY2RlZg==") {
		t.Error("the dry run printed the token secret in the Secret")
	}
}

func TestBootstrapTokenPhaseFailsBeforeOutput(t *testing.T) {
	d, out, cluster := bootstrapTokenData(t, "abcdef")
	d.KubeconfigDir = t.TempDir() // no admin.conf
	err := runBootstrapToken(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "admin.conf") {
		t.Fatalf("error %v", err)
	}
	if out.Len() != 0 || len(cluster.Actions()) != 0 {
		t.Errorf("printed %q and made %d calls before failing", out, len(cluster.Actions()))
	}
	if strings.Contains(err.Error(), phaseTestSecret) {
		t.Error("the error shows the token secret")
	}
}
