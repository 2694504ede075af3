package carotation

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func testNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

func testOptions() pki.Options { return pki.Options{Now: testNow} }

// testConfig is a defaulted configuration with ECDSA keys (quick to make).
func testConfig() *kubeadm.InitConfiguration { return configtest.ControlPlaneNode() }

const kcmManifest = `apiVersion: v1
kind: Pod
metadata:
  name: kube-controller-manager
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-controller-manager
    - --client-ca-file=/etc/kubernetes/pki/ca.crt
    - --cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt
    - --cluster-signing-key-file=/etc/kubernetes/pki/ca.key
    - --root-ca-file=/etc/kubernetes/pki/ca.crt
    image: registry.k8s.io/kube-controller-manager:v1.36.3
    name: kube-controller-manager
`

// testNode makes the certificates, kubeconfig files and controller
// manager manifest of a control-plane node under a new folder.
func testNode(t *testing.T) (*kubeadm.InitConfiguration, Layout) {
	t.Helper()
	dir := t.TempDir()
	l := Layout{CertDir: filepath.Join(dir, "pki"), KubernetesDir: dir, ManifestDir: filepath.Join(dir, "manifests")}
	cfg := testConfig()
	cfg.CertificatesDir = l.CertDir
	if _, _, err := pki.EnsureAll(context.Background(), cfg, l.CertDir, testOptions(), 2); err != nil {
		t.Fatal(err)
	}
	ca, caKey, err := pki.LoadCertAndKey(l.CertDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kubeconfigReaders {
		if k.file == cis.ApproverKubeconfigFile {
			continue // only under the CISHardening profile: TestApproverKubeconfigRotated
		}
		kc, _ := pki.LookupKubeconfig(k.file)
		key, _ := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
		cert, err := pki.NewSignedCert(kc.Spec(cfg), key.Public(), ca, caKey, testNow())
		if err != nil {
			t.Fatal(err)
		}
		keyPEM, _ := pki.EncodeKeyPEM(key)
		user := &clientcmdapi.AuthInfo{ClientCertificateData: pki.EncodeCertPEM(cert), ClientKeyData: keyPEM}
		if kc.KubeletOwned {
			// The kubelet's rotated pair: a dated file and a link to it.
			kp := filepath.Join(dir, "kubelet-pki")
			os.MkdirAll(kp, 0o700)
			dated := filepath.Join(kp, "kubelet-client-2026-01-01-00-00-00.pem")
			os.WriteFile(dated, append(pki.EncodeCertPEM(cert), keyPEM...), 0o600)
			current := filepath.Join(kp, "kubelet-client-current.pem")
			os.Symlink(dated, current)
			user = &clientcmdapi.AuthInfo{ClientCertificate: current, ClientKey: current}
		}
		writeKubeconfigUser(t, filepath.Join(dir, k.file), Bundle{ca}, user)
	}
	if err := os.MkdirAll(l.ManifestDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.ManifestDir, "kube-controller-manager.yaml"), []byte(kcmManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, l
}

func writeKubeconfigUser(t *testing.T, path string, cas Bundle, user *clientcmdapi.AuthInfo) {
	t.Helper()
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"kubernetes": {Server: "https://192.168.1.10:6443", CertificateAuthorityData: cas.PEM()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"user": user},
		Contexts:       map[string]*clientcmdapi.Context{"user@kubernetes": {Cluster: "kubernetes", AuthInfo: "user"}},
		CurrentContext: "user@kubernetes",
	}
	data, err := clientcmd.Write(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeCluster is an API server holding what a kubeadm cluster publishes,
// and its fake controller manager and API server publish the CA files of
// the node when restarted, as the real ones do.
type fakeCluster struct {
	client kubernetes.Interface
	l      Layout
}

func newFakeCluster(t *testing.T, l Layout) *fakeCluster {
	t.Helper()
	ca, _ := os.ReadFile(pki.CertPath(l.CertDir, "ca"))
	fp, _ := os.ReadFile(pki.CertPath(l.CertDir, "front-proxy-ca"))
	info, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"": {Server: "https://192.168.1.10:6443", CertificateAuthorityData: ca}}})
	if err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}, Data: map[string]string{bootstrapapi.KubeConfigKey: string(info)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: metav1.NamespaceSystem}, Data: map[string]string{"client-ca-file": string(ca), "requestheader-client-ca-file": string(fp)}},
	}
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}})
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		objs = append(objs,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": string(ca)}})
	}
	return &fakeCluster{client: fake.NewClientset(objs...), l: l}
}

// publish does what a started controller manager and the API server do
// with the node's CA files.
func (f *fakeCluster) publish(ctx context.Context) {
	ca, err1 := os.ReadFile(pki.CertPath(f.l.CertDir, "ca"))
	fp, err2 := os.ReadFile(pki.CertPath(f.l.CertDir, "front-proxy-ca"))
	if err1 != nil || err2 != nil {
		return
	}
	cms := f.client.CoreV1().ConfigMaps("")
	list, _ := cms.List(ctx, metav1.ListOptions{})
	for _, cm := range list.Items {
		switch cm.Name {
		case "kube-root-ca.crt":
			cm.Data["ca.crt"] = string(ca)
		case "extension-apiserver-authentication":
			cm.Data["client-ca-file"], cm.Data["requestheader-client-ca-file"] = string(ca), string(fp)
		default:
			continue
		}
		f.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, &cm, metav1.UpdateOptions{})
	}
}

// fakeComponents records restarts; fail makes a component's restart fail.
type fakeComponents struct {
	cluster *fakeCluster
	log     []string
	fail    map[string]error
}

func (f *fakeComponents) Running(context.Context, string) (string, error) { return "c1", nil }

func (f *fakeComponents) Restart(ctx context.Context, c string) error {
	return f.did(ctx, "restart "+c, c)
}

func (f *fakeComponents) WaitReplaced(ctx context.Context, c, old string) error {
	return f.did(ctx, "replaced "+c+" "+old, c)
}

func (f *fakeComponents) kubelet(ctx context.Context) error {
	return f.did(ctx, "restart kubelet", Kubelet)
}

func (f *fakeComponents) did(ctx context.Context, what, c string) error {
	if err := f.fail[c]; err != nil {
		return err
	}
	f.log = append(f.log, what)
	if c == ControllerManager {
		f.cluster.publish(ctx)
	}
	return nil
}

var errDown = errors.New("not healthy")

func changed(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k+" (removed)")
		}
	}
	sort.Strings(out)
	return out
}

func mustBundle(t *testing.T, path string) Bundle {
	t.Helper()
	b, err := ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func serials(b Bundle) string {
	var s []string
	for _, c := range b {
		s = append(s, c.SerialNumber.String())
	}
	return strings.Join(s, ",")
}

func certsOf(cs ...*x509.Certificate) Bundle { return Bundle(cs) }

// fakeRenewal is the renewal's Node: it records restarts and waits.
type fakeRenewal struct {
	log  []string
	fail map[string]error
}

func (f *fakeRenewal) Restart(_ context.Context, c string) error {
	if err := f.fail[c]; err != nil {
		return err
	}
	f.log = append(f.log, "restart "+c)
	return nil
}

func (f *fakeRenewal) Reloaded(_ context.Context, c string, serves *x509.Certificate) error {
	if err := f.fail[c]; err != nil {
		return err
	}
	f.log = append(f.log, "reloaded "+c)
	return nil
}

// issueWith is the controller manager's kubelet client signer: it signs a
// CSR with the CA its signing files (in the rotation's folder, else
// ca.crt/ca.key) hold now.
func issueWith(l Layout) func(context.Context, Request) ([]byte, error) {
	return func(_ context.Context, r Request) ([]byte, error) {
		ca, key, err := pki.LoadCertAndKey(l.CertDir, "rotate-ca/signer")
		if err != nil {
			if ca, key, err = pki.LoadCertAndKey(l.CertDir, "ca"); err != nil {
				return nil, err
			}
		}
		block, _ := pem.Decode(r.CSR)
		csr, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return nil, err
		}
		spec := pki.CertSpec{CommonName: csr.Subject.CommonName, Organization: csr.Subject.Organization, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: 365 * 24 * time.Hour}
		if r.Serving {
			spec.Usages, spec.DNSNames, spec.IPs = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, csr.DNSNames, csr.IPAddresses
		}
		cert, err := pki.NewSignedCert(spec, csr.PublicKey, ca, key, testNow())
		if err != nil {
			return nil, err
		}
		return pki.EncodeCertPEM(cert), nil
	}
}

// kubeletCert is the KubeletCert of the node of l, reaching the fake
// cluster.
func kubeletCert(l Layout, c kubernetes.Interface, restart func(context.Context) error, out *bytes.Buffer) *KubeletCert {
	return &KubeletCert{
		KubeletConf: filepath.Join(l.KubernetesDir, "kubelet.conf"), StateDir: l.Dir(),
		Client: func(context.Context) (kubernetes.Interface, error) { return c, nil },
		Issue:  issueWith(l), RestartKubelet: restart, Now: testNow, Timeout: 2e9, Out: out,
	}
}
