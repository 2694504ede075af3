package config_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/kubeadm-go/kubeadm/pkg/config"
)

// Load a file as kubeadm init would, with the machine's facts handed in,
// and read the defaults kubeadm fills in.
func ExampleLoad() {
	file := []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  podSubnet: 10.244.0.0/16
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: cp-1
`)
	cfg, err := config.Load(context.Background(), "kubeadm.yaml", file, config.Machine{
		AdvertiseAddress: netip.MustParseAddr("10.0.0.10"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("node:", cfg.Init.NodeRegistration.Name)
	fmt.Println("advertises:", cfg.Init.LocalAPIEndpoint.AdvertiseAddress, cfg.Init.LocalAPIEndpoint.BindPort)
	fmt.Println("services:", cfg.Cluster.Networking.ServiceSubnet)
	fmt.Println("pods:", cfg.Cluster.Networking.PodSubnet)
	fmt.Println("version:", cfg.Cluster.KubernetesVersion == config.KubernetesVersion)
	// Output:
	// node: cp-1
	// advertises: 10.0.0.10 6443
	// services: 10.96.0.0/12
	// pods: 10.244.0.0/16
	// version: true
}

// A file that does not validate: the error names the file and each field
// path, and wraps ErrInvalid (kubeadm exits with code 3 on it).
func ExampleLoad_invalid() {
	file := []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking:
  serviceSubnet: 10.96.0.0/33
`)
	_, err := config.Load(context.Background(), "kubeadm.yaml", file, config.Machine{})
	fmt.Println(errors.Is(err, config.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// kubeadm.yaml: invalid configuration: networking.serviceSubnet: Invalid value: "10.96.0.0/33": not a CIDR or comma-separated list of CIDRs
}

// An unknown field is refused, as `kubeadm config validate` refuses it.
func ExampleLoad_unknownField() {
	file := []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    token: abcdef.0123456789abcdef
    apiServerEndpoint: 10.0.0.10:6443
    unsafeSkipCAVerification: true
nodeRegistration:
  name: worker-1
  colour: blue
`)
	_, err := config.Load(context.Background(), "join.yaml", file, config.Machine{})
	fmt.Println(errors.Is(err, config.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// join.yaml: invalid configuration: strict decoding failed: JoinConfiguration (kubeadm.k8s.io/v1beta4): unknown field "nodeRegistration.colour"
}
