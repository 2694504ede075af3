package selfhosting

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
)

// TestCheckpointerPod: the checkpointer runs the copied kubeadm binary
// with the node's folders, on the host's network, with the kubelet's
// credentials read-only.
func TestCheckpointerPod(t *testing.T) {
	pod := CheckpointerPod(CheckpointerPodOptions{Image: "registry.k8s.io/pause:3.10.2", BinarySHA256: "abc",
		KubernetesDir: "/etc/kubernetes", ManifestDir: "/etc/kubernetes/manifests"})
	c := pod.Spec.Containers[0]
	if got := strings.Join(c.Command, " "); got != kubeadmbinary.Path+" alpha selfhosting checkpointer --kubeconfig=/etc/kubernetes/kubelet.conf --manifest-dir=/etc/kubernetes/manifests --checkpoint-dir=/etc/kubernetes/self-hosted" {
		t.Errorf("command %s", got)
	}
	if pod.Name != Checkpointer || pod.Namespace != "kube-system" || !pod.Spec.HostNetwork || pod.Annotations[BinaryHashAnnotation] != "abc" {
		t.Errorf("pod %s/%s hostNetwork %v annotations %v", pod.Namespace, pod.Name, pod.Spec.HostNetwork, pod.Annotations)
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.ReadOnly
	}
	if ro, ok := mounts["/etc/kubernetes"]; !ok || ro {
		t.Errorf("/etc/kubernetes must be mounted writable: %v", mounts)
	}
	if ro, ok := mounts[kubeletPKI]; !ok || !ro {
		t.Errorf("the kubelet's credentials must be mounted read-only: %v", mounts)
	}
}

func TestNodeName(t *testing.T) {
	dir := t.TempDir()
	write := func(cn string) string {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		p := filepath.Join(dir, cn+".conf")
		kc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: u
  user:
    client-certificate-data: ` + base64.StdEncoding.EncodeToString(certPEM) + `
    client-key-data: ` + base64.StdEncoding.EncodeToString(keyPEM) + `
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
		if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := NodeName(write("system:node:cp1")); err != nil || got != "cp1" {
		t.Errorf("NodeName = %q, %v", got, err)
	}
	if _, err := NodeName(write("kubernetes-admin")); err == nil || !strings.Contains(err.Error(), "not a node's") {
		t.Errorf("an admin's kubeconfig: %v", err)
	}
}
