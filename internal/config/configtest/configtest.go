// Package configtest gives tests a machine-independent config.Environment
// and a one-call way to turn configuration YAML into a defaulted internal
// InitConfiguration. Only tests import it.
package configtest

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
)

// Environment answers every machine question with a fixed value: host name
// "node1", the given default address, the containerd socket, versions as
// given, and the token "abcdef.0123456789abcdef". Warnings are dropped.
func Environment(address string) config.Environment {
	return config.Environment{
		Hostname:       func() (string, error) { return "node1", nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP(address), nil },
		CRISocket:      func() (string, error) { return "unix:///run/containerd/containerd.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
		NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:           func(string, ...any) {},
	}
}

// InitConfiguration decodes yaml strictly and applies every default with
// Environment(address); any error fails the test.
func InitConfiguration(t testing.TB, yaml, address string) *kubeadm.InitConfiguration {
	t.Helper()
	docs, err := config.Decode([]byte(yaml), config.Strict)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Environment(address).InitConfiguration(context.Background(), docs, config.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Parse sets the parsed values of a configuration a test built or changed
// by hand (AdvertiseIP, Subnets, Endpoint) from its strings, as defaulting
// does; a string that does not parse leaves its value empty.
func Parse(cfg *kubeadm.InitConfiguration) *kubeadm.InitConfiguration {
	cfg.AdvertiseIP = netip.Addr{}
	if a, err := netip.ParseAddr(cfg.LocalAPIEndpoint.AdvertiseAddress); err == nil {
		cfg.AdvertiseIP = a.Unmap()
	}
	config.ParseAddresses(&cfg.ClusterConfiguration)
	return cfg
}
