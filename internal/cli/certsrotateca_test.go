package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// TestCertsRotateCA runs the command as a user would on a control-plane
// node: a dry run of the whole changes nothing and says what each phase
// would do; prepare makes the new CAs; a dry run of trust lists the files
// it would write and the restarts.
func TestCertsRotateCA(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	cfg := certsTestTree(t, env, cfgPath)
	// The tree's kubeconfig files embed the cluster CA, as kubeadm's do.
	ca, err := os.ReadFile(pki.CertPath(cfg.CertificatesDir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range pki.KubeconfigTable() {
		path := filepath.Join(env.kubernetesDir, k.File)
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kc.Clusters {
			c.CertificateAuthorityData = ca
		}
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
	}
	// The cluster: its cluster-info, as init publishes it, and the Node.
	info, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"": {Server: "https://192.168.1.10:6443", CertificateAuthorityData: ca}}})
	if err != nil {
		t.Fatal(err)
	}
	cluster := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}, Data: map[string]string{bootstrapapi.KubeConfigKey: string(info)}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}})
	env.clusterClient = func(string) (kubernetes.Interface, error) { return cluster, nil }
	manifests := filepath.Join(env.kubernetesDir, "manifests")
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	kcm := "spec:\n  containers:\n  - command:\n    - kube-controller-manager\n    - --cluster-signing-cert-file=" + cfg.CertificatesDir + "/ca.crt\n    - --cluster-signing-key-file=" + cfg.CertificatesDir + "/ca.key\n"
	for name, data := range map[string]string{"kube-apiserver.yaml": "spec: {}\n", "kube-controller-manager.yaml": kcm} {
		if err := os.WriteFile(filepath.Join(manifests, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	snap := func() map[string]string {
		out := map[string]string{}
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				out[p] = string(b)
			}
			return nil
		})
		return out
	}
	before := snap()
	out, code := runCerts(t, env, "rotate-ca", "--dry-run", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "Would make a new Kubernetes cluster CA in "+filepath.Join(cfg.CertificatesDir, "rotate-ca/ca.crt")) ||
		!strings.Contains(out, "Would make this node and the cluster trust the new CAs") {
		t.Fatalf("dry run: code %d\n%s", code, out)
	}
	if after := snap(); len(after) != len(before) {
		t.Fatalf("the dry run wrote files")
	}
	out, code = runCerts(t, env, "rotate-ca", "phase", "prepare", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "Made the new front proxy CA") || !strings.Contains(out, "Made the new service-account signing key: "+filepath.Join(cfg.CertificatesDir, "rotate-ca/sa.key")) {
		t.Fatalf("prepare: code %d\n%s", code, out)
	}
	if s, err := carotation.ReadCA(cfg.CertificatesDir, carotation.Rotated(nil)[0]); err != nil || s.Next == nil {
		t.Fatalf("no new CA: %v", err)
	}
	made := snap()
	out, code = runCerts(t, env, "rotate-ca", "phase", "trust", "--dry-run", "--config", cfgPath)
	for _, want := range []string{
		"Would write " + pki.CertPath(cfg.CertificatesDir, "ca") + " (trust bundle of the Kubernetes cluster CA)",
		"Would write " + filepath.Join(env.kubernetesDir, "admin.conf") + " (certificate-authority-data)",
		"Would write " + filepath.Join(manifests, "kube-controller-manager.yaml") + " (flags --cluster-signing-cert-file= and --cluster-signing-key-file=)",
		"Would restart kube-controller-manager", "Would restart kube-scheduler", "Would restart kubelet",
		"Would write " + filepath.Join(cfg.CertificatesDir, "sa.pub") + " (the service-account public keys: the current and the new one)", "Would restart kube-apiserver",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("trust dry run: code %d, no %q:\n%s", code, want, out)
		}
	}
	if after := snap(); len(after) != len(made) {
		t.Errorf("the trust dry run wrote files")
	}
	// Another control-plane node, without the folder, while a Node
	// records the rotation's trust step: prepare refuses to make other
	// new CAs.
	t.Run("prepare refuses while a rotation is under way elsewhere", func(t *testing.T) {
		saved := filepath.Join(dir, "saved-rotate-ca")
		folder := filepath.Join(cfg.CertificatesDir, carotation.Folder)
		if err := os.Rename(folder, saved); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(saved, folder)
		patch := `{"metadata":{"annotations":{"` + carotation.TrustedAnnotation + `":"sha256:00"}}}`
		if _, err := cluster.CoreV1().Nodes().Patch(context.Background(), "node1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		defer cluster.CoreV1().Nodes().Patch(context.Background(), "node1", types.MergePatchType, []byte(`{"metadata":{"annotations":null}}`), metav1.PatchOptions{})
		out, code := runCerts(t, env, "rotate-ca", "phase", "prepare", "--config", cfgPath)
		if code != 1 || !strings.Contains(out, "a CA rotation is under way in the cluster (cluster-info lists 1 CAs; Nodes recording a step: [node1]; Secret kube-system/kubeadm-rotate-ca stored: false)") {
			t.Fatalf("prepare: code %d\n%s", code, out)
		}
		if _, err := os.Stat(folder); !os.IsNotExist(err) {
			t.Errorf("prepare made %s: %v", folder, err)
		}
	})
	// The new CAs stored in the cluster, then downloaded on another
	// control-plane node (here the same tree, without its folder).
	t.Run("upload and download", func(t *testing.T) {
		folder := filepath.Join(cfg.CertificatesDir, carotation.Folder)
		out, code := runCerts(t, env, "rotate-ca", "phase", "prepare", "--upload-certs", "--config", cfgPath)
		key, found := "", false
		if _, after, ok := strings.Cut(out, "[rotate-ca] Using certificate key:\n"); ok {
			key, _, found = strings.Cut(after, "\n")
		}
		if code != 0 || !found || len(key) != 64 || !strings.Contains(out, "The new Kubernetes cluster CA is already made") {
			t.Fatalf("prepare --upload-certs: code %d\n%s", code, out)
		}
		made := snap()
		saved := filepath.Join(dir, "uploaded-rotate-ca")
		if err := os.Rename(folder, saved); err != nil {
			t.Fatal(err)
		}
		defer func() { os.RemoveAll(folder); os.Rename(saved, folder) }()
		out, code = runCerts(t, env, "rotate-ca", "phase", "prepare", "--config", cfgPath)
		if code != 1 || !strings.Contains(out, "Secret kube-system/kubeadm-rotate-ca stored: true") {
			t.Fatalf("prepare without the key: code %d\n%s", code, out)
		}
		wrong := strings.Repeat("ab", 32)
		out, code = runCerts(t, env, "rotate-ca", "phase", "prepare", "--certificate-key", wrong, "--config", cfgPath)
		if code != 1 || !strings.Contains(out, "does not decrypt with this certificate key") || strings.Contains(out, wrong) {
			t.Fatalf("prepare with a wrong key: code %d\n%s", code, out)
		}
		out, code = runCerts(t, env, "rotate-ca", "phase", "prepare", "--certificate-key", key, "--config", cfgPath)
		if code != 0 || !strings.Contains(out, "Downloaded the new CAs and service-account key from the Secret kube-system/kubeadm-rotate-ca") || strings.Contains(out, key) {
			t.Fatalf("prepare --certificate-key: code %d\n%s", code, out)
		}
		got := snap()
		for p, data := range made {
			if strings.HasPrefix(p, folder+"/") && got[p] != data {
				t.Errorf("%s differs after the download", p)
			}
		}
		for p := range got {
			if _, ok := made[p]; !ok && !strings.HasPrefix(p, saved+"/") {
				t.Errorf("%s was not there before", p)
			}
		}
	})
	// The flag of finish, on the phase and on the whole command.
	for _, args := range [][]string{{"rotate-ca", "phase", "finish"}, {"rotate-ca"}} {
		out, code = runCerts(t, env, append(args, "--dry-run", "--drop-old-service-account-key-now", "--config", cfgPath)...)
		if code != 0 {
			t.Errorf("%v --drop-old-service-account-key-now: code %d\n%s", args, code, out)
		}
	}
}
