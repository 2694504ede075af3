package joinphases

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

func TestWriteCA(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pki", "ca.crt")
	if err := writeCA(path, []byte("CA-1")); err != nil {
		t.Fatal(err)
	}
	if err := writeCA(path, []byte("CA-1")); err != nil {
		t.Fatalf("writing the same CA again: %v", err)
	}
	err := writeCA(path, []byte("CA-2"))
	if err == nil || !strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("another CA over an existing one: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "CA-1" {
		t.Errorf("the existing CA was changed to %q", got)
	}
	if err := writeCA(filepath.Join(dir, "x.crt"), nil); err == nil {
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
			d := &Data{Cfg: &kubeadm.JoinConfiguration{}, bootstrap: c}
			err := refuseReadyNode(context.Background(), d, "w1")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
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

func TestInitDocumentTakesTheNodesPart(t *testing.T) {
	j := &kubeadm.JoinConfiguration{
		NodeRegistration: kubeadm.NodeRegistrationOptions{Name: "cp-2", CRISocket: "unix:///run/x.sock"},
		ControlPlane: &kubeadm.JoinControlPlane{
			LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.2", BindPort: 6443},
			CertificateKey:   "k",
		},
	}
	init := initDocument(j)
	if init.NodeRegistration.Name != "cp-2" || init.LocalAPIEndpoint.AdvertiseAddress != "10.0.0.2" || init.CertificateKey != "k" {
		t.Errorf("init document: %+v", init)
	}
	j.ControlPlane = nil
	if init := initDocument(j); init.LocalAPIEndpoint.AdvertiseAddress != "" {
		t.Errorf("a worker got an API endpoint: %+v", init.LocalAPIEndpoint)
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
