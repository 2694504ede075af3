package kubeconfig

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
)

func initConfig(cpe, addr string, port int32) *kubeadm.InitConfiguration {
	cfg := &kubeadm.InitConfiguration{}
	cfg.ClusterName = "kubernetes"
	cfg.ControlPlaneEndpoint = cpe
	cfg.LocalAPIEndpoint = kubeadm.APIEndpoint{AdvertiseAddress: addr, BindPort: port}
	cfg.NodeRegistration.Name = "node1"
	return configtest.Parse(cfg)
}

func TestControlPlaneSpecs(t *testing.T) {
	tests := []struct {
		name          string
		cfg           *kubeadm.InitConfiguration
		admin, local  string
		wantWarnCount int
	}{
		{"no endpoint", initConfig("", "10.1.2.3", 6443), "https://10.1.2.3:6443", "https://10.1.2.3:6443", 0},
		{"DNS endpoint takes the bind port", initConfig("lb.example.com", "10.1.2.3", 7443), "https://lb.example.com:7443", "https://10.1.2.3:7443", 0},
		{"endpoint with the bind port", initConfig("lb.example.com:6443", "10.1.2.3", 6443), "https://lb.example.com:6443", "https://10.1.2.3:6443", 0},
		{"endpoint port wins, with a warning per file", initConfig("lb.example.com:9443", "10.1.2.3", 6443), "https://lb.example.com:9443", "https://10.1.2.3:6443", 2},
		{"IPv6 endpoint with port", initConfig("[fd00::10]:8443", "fd00::5", 6443), "https://[fd00::10]:8443", "https://[fd00::5]:6443", 2},
		{"bare IPv6 endpoint", initConfig("fd00::10", "fd00::5", 6443), "https://[fd00::10]:6443", "https://[fd00::5]:6443", 0},
		{"IPv6 addresses are written canonically", initConfig("", "FD00:0:0::5", 6443), "https://[fd00::5]:6443", "https://[fd00::5]:6443", 0},
		// As upstream: an empty port is no port, and the endpoint's host
		// is kept as written.
		{"empty port takes the bind port", initConfig("lb.example.com:", "10.1.2.3", 7443), "https://lb.example.com:7443", "https://10.1.2.3:7443", 0},
		{"endpoint IPv6 address as written", initConfig("[FD00:0::10]:", "fd00::5", 6443), "https://[FD00:0::10]:6443", "https://[fd00::5]:6443", 0},
		{"endpoint mapped IPv4 as written", initConfig("::ffff:10.1.2.4", "10.1.2.3", 6443), "https://[::ffff:10.1.2.4]:6443", "https://10.1.2.3:6443", 0},
		{"endpoint port as written", initConfig("lb.example.com:06443", "10.1.2.3", 6443), "https://lb.example.com:06443", "https://10.1.2.3:6443", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings []string
			warn := func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }
			specs, err := ControlPlaneSpecs(tt.cfg, warn)
			if err != nil {
				t.Fatal(err)
			}
			want := []Spec{
				{FileName: "admin.conf", ClusterName: "kubernetes", Server: tt.admin, ClientName: "kubernetes-admin", Organizations: []string{"kubeadm:cluster-admins"}},
				{FileName: "super-admin.conf", ClusterName: "kubernetes", Server: tt.admin, ClientName: "kubernetes-super-admin", Organizations: []string{"system:masters"}},
				{FileName: "kubelet.conf", ClusterName: "kubernetes", Server: tt.local, ClientName: "system:node:node1", Organizations: []string{"system:nodes"}},
				{FileName: "controller-manager.conf", ClusterName: "kubernetes", Server: tt.local, ClientName: "system:kube-controller-manager"},
				{FileName: "scheduler.conf", ClusterName: "kubernetes", Server: tt.local, ClientName: "system:kube-scheduler"},
			}
			if !reflect.DeepEqual(specs, want) {
				t.Errorf("specs:\n got %+v\nwant %+v", specs, want)
			}
			if len(warnings) != tt.wantWarnCount {
				t.Errorf("warnings: %q, want %d", warnings, tt.wantWarnCount)
			}
		})
	}
}

func TestControlPlaneSpecNames(t *testing.T) {
	cfg := initConfig("", "10.1.2.3", 6443)
	cfg.ClusterName = "prod"
	s, err := ControlPlaneSpec(AdminFile, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ContextName(); got != "kubernetes-admin@prod" {
		t.Errorf("context name %q", got)
	}
	if _, err := ControlPlaneSpec("other.conf", cfg, nil); err == nil {
		t.Error("an unknown file name must fail")
	}
	cfg.NodeRegistration.Name = ""
	if _, err := ControlPlaneSpec(KubeletFile, cfg, nil); err == nil {
		t.Error("kubelet.conf without a node name must fail")
	}
}

func TestControlPlaneURLErrors(t *testing.T) {
	tests := []struct {
		cpe, addr string
		port      int32
		want      string
	}{
		{"", "not-an-ip", 6443, "not an IP address"},
		{"", "10.0.0.1", 0, "bind port"},
		{"lb:abc", "10.0.0.1", 6443, `port "abc"`},
		{"lb:0", "10.0.0.1", 6443, `port "0"`},
		{"[fd00::1]", "10.0.0.1", 6443, "neither an IP address nor a DNS name"},
		{"Bad_Host", "10.0.0.1", 6443, "neither an IP address nor a DNS name"},
	}
	for _, tt := range tests {
		_, err := ControlPlaneURL(initConfig(tt.cpe, tt.addr, tt.port), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ControlPlaneURL(%q, %s:%d): %v, want an error with %q", tt.cpe, tt.addr, tt.port, err, tt.want)
		}
	}
}
