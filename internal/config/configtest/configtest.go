// Package configtest gives tests a machine-independent config.Environment,
// a one-call way to turn configuration YAML into a defaulted internal
// InitConfiguration, and the defaulted configuration of a first
// control-plane node that certificate tests start from. Only tests import
// it.
package configtest

import (
	"context"
	"net"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
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

// ControlPlaneNode is a first control-plane node's configuration as
// defaulting leaves it: node1 advertising 192.168.1.10:6443, the default
// service subnet and DNS domain, a local etcd, cluster "kubernetes", the
// default certificate lifetimes and ECDSA-P256 keys (quick to make), parsed.
// CertificatesDir is empty: each test picks its folder. A test that changes
// an address calls Parse again.
func ControlPlaneNode() *kubeadm.InitConfiguration {
	cfg := &kubeadm.InitConfiguration{}
	cfg.NodeRegistration.Name = "node1"
	cfg.LocalAPIEndpoint = kubeadm.APIEndpoint{AdvertiseAddress: "192.168.1.10", BindPort: 6443}
	cfg.Networking = kubeadm.Networking{ServiceSubnet: "10.96.0.0/12", DNSDomain: "cluster.local"}
	cfg.Etcd.Local = &kubeadm.LocalEtcd{}
	cfg.EncryptionAlgorithm = v1beta4.EncryptionAlgorithmECDSAP256
	cfg.CertificateValidityPeriod = &metav1.Duration{Duration: v1beta4.DefaultCertificateValidityPeriod}
	cfg.CACertificateValidityPeriod = &metav1.Duration{Duration: v1beta4.DefaultCACertificateValidityPeriod}
	cfg.ClusterName = "kubernetes"
	return Parse(cfg)
}
