package config_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
)

// FuzzLoad feeds arbitrary bytes through decoding, defaulting and
// validation of every kind. Errors are fine; panics are not, nor a
// configuration that validates without its addresses parsed.
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
}
