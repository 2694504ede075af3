package bootstraptoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/cluster-info.golden.yaml is the kubeconfig upstream kubeadm
// v1.36.3 put into cluster-info for a cluster whose admin kubeconfig is
// testdata/admin.conf (same CA and server).

func TestClusterInfoMatchesUpstream(t *testing.T) {
	cm, err := ClusterInfo("testdata/admin.conf")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Namespace != "kube-public" || cm.Name != "cluster-info" || len(cm.Labels)+len(cm.Annotations) != 0 {
		t.Errorf("ConfigMap %s/%s labels %v annotations %v", cm.Namespace, cm.Name, cm.Labels, cm.Annotations)
	}
	want, err := os.ReadFile("testdata/cluster-info.golden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 1 || cm.Data["kubeconfig"] != string(want) {
		t.Errorf("data %v\nwant kubeconfig:\n%s", cm.Data, want)
	}
}

// writeKubeconfig writes a kubeconfig whose cluster entry is clusterYAML
// (indented under "cluster:"), into a temporary folder with ca.crt.
func writeKubeconfig(t *testing.T, clusterYAML string) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := os.ReadFile("testdata/ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
` + clusterYAML + `
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
users:
- name: u
  user: {token: not-a-real-credential}
`
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClusterInfoCopiesTheCluster(t *testing.T) {
	// A CA file named relative to the kubeconfig is read in, and the other
	// settings of the cluster are kept, as upstream does.
	path := writeKubeconfig(t, "    certificate-authority: ca.crt\n    server: https://127.0.0.1:6443\n    tls-server-name: kubernetes")
	cm, err := ClusterInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	golden, _ := os.ReadFile("testdata/cluster-info.golden.yaml")
	want := strings.Replace(string(golden), "    server: https://10.199.0.2:6443\n", "    server: https://127.0.0.1:6443\n    tls-server-name: kubernetes\n", 1)
	if got := cm.Data["kubeconfig"]; got != want {
		t.Errorf("kubeconfig\n%s\nwant\n%s", got, want)
	}
}

func TestCurrentClusterErrors(t *testing.T) {
	tests := []struct {
		name, cluster, want string
	}{
		{"no CA", "    server: https://10.0.0.1:6443", "holds no CA certificate"},
		{"CA file missing", "    certificate-authority: missing.crt\n    server: https://10.0.0.1:6443", "reading the CA certificate"},
		{"no server", "    certificate-authority: ca.crt", "has no server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeKubeconfig(t, tt.cluster)
			_, err := CurrentCluster(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and saying %q", err, path, tt.want)
			}
		})
	}
	if _, err := CurrentCluster(filepath.Join(t.TempDir(), "absent.conf")); err == nil || !strings.Contains(err.Error(), "absent.conf") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	noContext := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(noContext, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CurrentCluster(noContext); err == nil || !strings.Contains(err.Error(), "no current context") {
		t.Errorf("kubeconfig without context: %v", err)
	}
}
