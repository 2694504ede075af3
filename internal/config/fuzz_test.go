package config_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// FuzzLoad feeds arbitrary bytes through decoding, defaulting and
// validation of every kind. Errors are fine; panics are not, nor a
// configuration that validates without its addresses parsed, or whose
// control-plane endpoint the kubeconfig files or the certificates cannot
// take.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/config/*.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n"))
	// Subnets and addresses written unusually, which validation and the
	// parser must judge alike.
	for _, n := range []string{
		`{serviceSubnet: "::ffff:10.96.0.0/108", podSubnet: "::ffff:10.244.0.0/112"}`,
		`{serviceSubnet: "10.96.0.5/12", podSubnet: "FD00:10::/56,10.244.0.0/16"}`,
		`{serviceSubnet: "010.96.0.0/12"}`,
		`{serviceSubnet: "10.96.0.0/012"}`,
		`{serviceSubnet: "10.96.0.0/12,"}`,
	} {
		f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking: " + n + "\n"))
	}
	f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint: {advertiseAddress: \"::ffff:192.0.2.7\"}\n"))
	for _, e := range []string{"lb.example.test", "lb.example.test:", "[FD00::1]:06443", "fd00::1", "::ffff:192.0.2.8", "[lb]:7443", "1.2.3", "[fd00::1]", "fe80::1%eth0"} {
		f.Add([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: \"" + e + "\"\n"))
	}
	env := configtest.Environment("192.0.2.1")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []config.Strictness{config.Strict, config.Lenient} {
			docs, err := config.Decode(data, strict)
			if err != nil {
				continue
			}
			if init, err := env.InitConfiguration(context.Background(), docs, config.DefaultOptions{}); err == nil {
				if len(validation.ValidateInitConfiguration(init)) == 0 {
					checkParsed(t, init)
				}
				if _, err := config.MarshalInit(init); err != nil {
					t.Fatalf("a decoded configuration must marshal: %v", err)
				}
			}
			if join, err := env.JoinConfiguration(docs, config.DefaultOptions{}); err == nil {
				validation.ValidateJoinConfiguration(join)
			}
			if reset, err := env.ResetConfiguration(docs, config.DefaultOptions{}); err == nil {
				validation.ValidateResetConfiguration(reset)
			}
			validation.ValidateUpgradeConfiguration(env.UpgradeConfiguration(docs))
		}
	})
}

// checkParsed fails when a configuration that validates lacks a parsed
// value the phases rely on: validation and the parser in defaulting must
// accept the same strings.
func checkParsed(t *testing.T, c *kubeadm.InitConfiguration) {
	t.Helper()
	if got, want := len(c.Subnets.Service), len(strings.Split(c.Networking.ServiceSubnet, ",")); got != want {
		t.Fatalf("serviceSubnet %q validates but %d of %d subnets were parsed", c.Networking.ServiceSubnet, got, want)
	}
	if c.Networking.PodSubnet != "" {
		if got, want := len(c.Subnets.Pod), len(strings.Split(c.Networking.PodSubnet, ",")); got != want {
			t.Fatalf("podSubnet %q validates but %d of %d subnets were parsed", c.Networking.PodSubnet, got, want)
		}
	}
	if c.AdvertiseIP.String() != c.LocalAPIEndpoint.AdvertiseAddress {
		t.Fatalf("advertise address %q parsed as %v", c.LocalAPIEndpoint.AdvertiseAddress, c.AdvertiseIP)
	}
	checkEndpoint(t, c)
}

// checkEndpoint fails when a controlPlaneEndpoint that validates was not
// parsed, or when what validation accepted is not what the kubeconfig
// files and the API server's certificate are made of.
func checkEndpoint(t *testing.T, c *kubeadm.InitConfiguration) {
	t.Helper()
	raw, ep := c.ControlPlaneEndpoint, c.Endpoint
	if ep != kubeadm.ParseEndpoint(raw) {
		t.Fatalf("controlPlaneEndpoint %q parsed as %+v, want %+v", raw, ep, kubeadm.ParseEndpoint(raw))
	}
	if raw == "" {
		return
	}
	if ep.Host == "" || ep.IsIP() != (net.ParseIP(ep.Host) != nil) {
		t.Fatalf("controlPlaneEndpoint %q validates but parsed as %+v", raw, ep)
	}
	server, err := kubeconfig.ControlPlaneURL(c, nil)
	if err != nil {
		t.Fatalf("controlPlaneEndpoint %q validates but makes no kubeconfig server: %v", raw, err)
	}
	u, err := url.Parse(server)
	if err != nil || u.Hostname() != ep.Host || (ep.Port != "" && u.Port() != ep.Port) {
		t.Fatalf("controlPlaneEndpoint %q (%+v) makes the kubeconfig server %q", raw, ep, server)
	}
	sans, err := pki.APIServerSANs(c)
	if err != nil {
		t.Fatalf("controlPlaneEndpoint %q validates but makes no API server names: %v", raw, err)
	}
	found := slices.Contains(sans.DNSNames, strings.ToLower(ep.Host))
	if ep.IsIP() {
		found = slices.ContainsFunc(sans.IPs, func(ip net.IP) bool { return ip.Equal(net.IP(ep.Addr.AsSlice())) })
	}
	if !found {
		t.Fatalf("controlPlaneEndpoint %q (%+v) is not among the API server's names %+v", raw, ep, sans)
	}
}
