package joinphases

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet/kubelettest"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

func TestWriteCA(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pki", "ca.crt")
	if err := writeCA(path, []byte("CA-1"), pki.CertMode); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v)", fi.Mode(), err)
	}
	// Again with the CISHardening profile's mode: only the mode changes.
	if err := writeCA(path, []byte("CA-1"), 0o600); err != nil {
		t.Fatalf("writing the same CA again: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v)", fi.Mode(), err)
	}
	err := writeCA(path, []byte("CA-2"), pki.CertMode)
	if err == nil || !strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("another CA over an existing one: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "CA-1" {
		t.Errorf("the existing CA was changed to %q", got)
	}
	if err := writeCA(filepath.Join(dir, "x.crt"), nil, pki.CertMode); err == nil {
		t.Errorf("an empty CA was accepted")
	}
}

func TestRefuseReadyNode(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
		}
	}
	cases := []struct {
		name    string
		objects []*corev1.Node
		wantErr bool
	}{
		{"no such node", nil, false},
		{"a NotReady node of that name", []*corev1.Node{node("w1", corev1.ConditionFalse)}, false},
		{"a Ready node of that name", []*corev1.Node{node("w1", corev1.ConditionTrue)}, true},
		{"a Ready node of another name", []*corev1.Node{node("w2", corev1.ConditionTrue)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			for _, n := range tc.objects {
				if _, err := c.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			d := &Data{Cfg: &kubeadm.JoinConfiguration{}, bootstrap: c, KubeconfigDir: t.TempDir(), Out: &bytes.Buffer{}}
			err := refuseReadyNode(context.Background(), d, "w1", nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// nodeCredentials writes, under dir, the PEM file of a kubelet client
// certificate for the Node name signed by a new CA, and a kubelet.conf
// naming it as the kubelet writes one, at server; it returns the CA's PEM.
func nodeCredentials(t *testing.T, dir, name, server string) []byte {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", IsCA: true, Validity: time.Hour}, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewSignedCert(pki.CertSpec{CommonName: "system:node:" + name, Organization: []string{"system:nodes"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour}, key.Public(), ca, caKey, now)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := pki.EncodeKeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	pemPath := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(pemPath, append(pki.EncodeCertPEM(cert), keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: pki.EncodeCertPEM(ca)}
	kc.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: pemPath, ClientKey: pemPath}
	kc.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	kc.CurrentContext = "default-context"
	if err := kubeconfig.WriteFile(filepath.Join(dir, KubeletConf), kc); err != nil {
		t.Fatal(err)
	}
	return pki.EncodeCertPEM(ca)
}

// A Ready Node of the joining node's name is this machine's when the
// kubelet here holds that Node's credentials from the cluster's CA.
func TestRefuseReadyNodeOfThisMachine(t *testing.T) {
	ready := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "cp2"},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	dir := t.TempDir()
	ca := nodeCredentials(t, dir, "cp2", "https://10.0.0.2:6443")
	otherDir := t.TempDir()
	otherCA := nodeCredentials(t, otherDir, "cp3", "https://10.0.0.3:6443")
	cases := []struct {
		name    string
		dir     string
		ca      []byte
		wantErr bool
	}{
		{"credentials of this Node from the cluster's CA", dir, ca, false},
		{"credentials from another CA", dir, otherCA, true},
		{"credentials of another Node", otherDir, otherCA, true},
		{"no kubelet.conf", t.TempDir(), ca, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset(ready)
			var out bytes.Buffer
			d := &Data{Cfg: &kubeadm.JoinConfiguration{}, bootstrap: c, KubeconfigDir: tc.dir, Out: &out}
			err := refuseReadyNode(context.Background(), d, "cp2", tc.ca)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !strings.Contains(out.String(), "is this machine's") {
				t.Errorf("output: %q", out.String())
			}
		})
	}
}

// A control-plane node's kubelet bootstraps through the cluster's endpoint;
// once its Node is registered, kubelet.conf names the node's own API server
// and the kubelet is restarted, once.
func TestPointKubeletAtLocalAPIServer(t *testing.T) {
	dir := t.TempDir()
	nodeCredentials(t, dir, "cp2", "https://lb.example:6443")
	path := filepath.Join(dir, KubeletConf)
	host := &kubelettest.SystemdHost{}
	c := fake.NewClientset()
	d := &Data{
		Cfg:           &kubeadm.JoinConfiguration{ControlPlane: &kubeadm.JoinControlPlane{}},
		bootstrap:     c,
		KubeconfigDir: dir,
		Out:           &bytes.Buffer{},
		KubeletHost:   host,
		initCfg: configtest.Parse(&kubeadm.InitConfiguration{
			NodeRegistration: kubeadm.NodeRegistrationOptions{Name: "cp2"},
			LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.2", BindPort: 6443},
		}),
	}
	// Without its Node the kubelet.conf is left alone until the deadline.
	err := pointKubeletAtLocalAPIServer(context.Background(), d, path, time.Now().Add(300*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "did not register") {
		t.Fatalf("without a Node: %v", err)
	}
	if server(t, path) != "https://lb.example:6443" || len(host.Calls) != 0 {
		t.Fatalf("changed without a Node: server %s, runs %v", server(t, path), host.Calls)
	}
	if _, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := pointKubeletAtLocalAPIServer(context.Background(), d, path, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got := server(t, path); got != "https://10.0.0.2:6443" {
		t.Errorf("server %s", got)
	}
	if want := []string{"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet"}; strings.Join(host.Calls, ";") != strings.Join(want, ";") {
		t.Errorf("commands %v, want %v (once)", host.Calls, want)
	}
}

func server(t *testing.T, path string) string {
	t.Helper()
	kc, err := kubeconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return currentCluster(kc).Server
}

func TestRunTreeOnlyNamedChildren(t *testing.T) {
	var ran []string
	step := func(name string) workflow.Phase[*initphases.Data] {
		return workflow.Phase[*initphases.Data]{Name: name, Run: func(context.Context, *initphases.Data) error {
			ran = append(ran, name)
			return nil
		}}
	}
	group := workflow.Phase[*initphases.Data]{
		Name: "group",
		Run:  func(context.Context, *initphases.Data) error { ran = append(ran, "group"); return nil },
		Phases: []workflow.Phase[*initphases.Data]{
			{Name: "all", RunAllSiblings: true},
			step("a"), step("b"), step("c"),
		},
	}
	if err := workflow.RunTree(context.Background(), group, &initphases.Data{}, []string{"a", "c"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ran, ","); got != "group,a,c" {
		t.Errorf("ran %s, want group,a,c", got)
	}
}

func TestControlPlanePhasesPassOverWorkers(t *testing.T) {
	d := &Data{Cfg: &kubeadm.JoinConfiguration{}, Out: &bytes.Buffer{}}
	for _, p := range []workflow.Phase[*Data]{ControlPlanePreparePhase(), ControlPlaneJoinPhase(), WaitControlPlanePhase(), EtcdJoinPhase(), CheckEtcdPhase()} {
		ok, err := p.RunIf(d)
		if err != nil || ok {
			t.Errorf("phase %s runs on a worker (ok=%v, err=%v)", p.Name, ok, err)
		}
	}
}

func TestCheckSharedPKI(t *testing.T) {
	dir := t.TempDir()
	v := &initphases.Data{Cfg: &kubeadm.InitConfiguration{}, CertDir: dir}
	for _, f := range []string{"ca.crt", "ca.key", "sa.key", "sa.pub", "etcd/ca.crt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := checkSharedPKI(v)
	if err == nil || !strings.Contains(err.Error(), "[front-proxy-ca.crt front-proxy-ca.key etcd/ca.key]") {
		t.Errorf("local etcd: %v, want the three missing files named", err)
	}
	v.Cfg.Etcd.External = &kubeadm.ExternalEtcd{}
	if err := checkSharedPKI(v); err == nil || strings.Contains(err.Error(), "etcd/") {
		t.Errorf("external etcd: %v, want only the front proxy's files named", err)
	}
	for _, f := range []string{"front-proxy-ca.crt", "front-proxy-ca.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkSharedPKI(v); err != nil {
		t.Errorf("external etcd, all files there: %v", err)
	}
}

// TestCertsRenewalPhase: the last join phase installs the renewal timer
// on a control-plane node only.
func TestCertsRenewalPhase(t *testing.T) {
	phases := Phases()
	last := phases[len(phases)-1]
	if last.Name != "certs-renewal" || last.RunIf == nil {
		t.Fatalf("last phase %q", last.Name)
	}
	for _, tc := range []struct {
		name string
		cfg  *kubeadm.JoinConfiguration
		want bool
	}{
		{"worker", &kubeadm.JoinConfiguration{}, false},
		{"control plane", &kubeadm.JoinConfiguration{ControlPlane: &kubeadm.JoinControlPlane{}}, true},
	} {
		if run, err := last.RunIf(&Data{Cfg: tc.cfg}); err != nil || run != tc.want {
			t.Errorf("%s: runs %v (%v), want %v", tc.name, run, err, tc.want)
		}
	}
}
