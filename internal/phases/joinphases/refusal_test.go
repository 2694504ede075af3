package joinphases

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Issue 29: an API server (or a proxy before it) that refuses the joining
// node with a 403 and an empty body made join print an empty reason. The
// join now says what was refused, to which token, and what to check.
func TestJoinExplainsAnEmptyRefusal(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	boot := &clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"kubernetes": {
			Server:                   srv.URL,
			CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{TLSBootstrapUser: {Token: "abcdef.0123456789abcdef"}},
		Contexts:       map[string]*clientcmdapi.Context{"boot": {Cluster: "kubernetes", AuthInfo: TLSBootstrapUser}},
		CurrentContext: "boot",
	}
	d := &Data{
		Cfg:      &kubeadm.JoinConfiguration{},
		Discover: func(context.Context) (*clientcmdapi.Config, error) { return boot, nil },
	}
	_, err := d.InitConfig(context.Background())
	if err == nil {
		t.Fatal("no error from a server that refuses everything")
	}
	t.Log(err)
	msg := err.Error()
	for _, want := range []string{
		"kubeadm-config", "get configmaps", "403 Forbidden", `"system:bootstrap:abcdef"`,
		"auth-extra-groups", "kubeadm init phase bootstrap-token",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "0123456789abcdef") {
		t.Error("the message shows the token's secret")
	}
}

func TestControlPlaneJoinNeedsAnEndpointOrTheBalancer(t *testing.T) {
	tests := []struct {
		name    string
		c       kubeadm.ClusterConfiguration
		wantErr bool
	}{
		{name: "controlPlaneEndpoint", c: kubeadm.ClusterConfiguration{ControlPlaneEndpoint: "lb.example:6443"}},
		{name: "node-local balancers", c: kubeadm.ClusterConfiguration{FeatureGates: map[string]bool{"NodeLocalAPILoadBalancer": true}}},
		{name: "neither", c: kubeadm.ClusterConfiguration{}, wantErr: true},
		{name: "gate off", c: kubeadm.ClusterConfiguration{FeatureGates: map[string]bool{"NodeLocalAPILoadBalancer": false}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := canTakeControlPlane(&tt.c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "controlPlaneEndpoint") {
				t.Errorf("the refusal does not name controlPlaneEndpoint: %v", err)
			}
		})
	}
}

// A self-hosted control plane supports one control-plane node: joining
// another is refused even with a controlPlaneEndpoint.
func TestControlPlaneJoinRefusesSelfHosting(t *testing.T) {
	c := kubeadm.ClusterConfiguration{ControlPlaneEndpoint: "lb.example:6443", FeatureGates: map[string]bool{"SelfHosting": true}}
	if err := canTakeControlPlane(&c); err == nil || !strings.Contains(err.Error(), "self-hosted") {
		t.Errorf("got %v", err)
	}
}
