package config

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current code")

// readCorpus decodes a file of the compatibility corpus.
func readCorpus(t *testing.T, name string) *Documents {
	t.Helper()
	docs, err := ReadFile(filepath.Join("..", "..", "testdata", "config", name), Lenient)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// clusterDocs are the documents a cluster stores: a ClusterConfiguration
// and the component configurations.
func clusterDocs(t *testing.T) *Documents {
	t.Helper()
	d := readCorpus(t, "valid-component-configs.yaml")
	return &Documents{Source: "the cluster", Cluster: d.Cluster, Kubelet: d.Kubelet, KubeProxy: d.KubeProxy}
}

// TestNodeConfigurationGolden: the configuration a joining or upgraded
// node runs (the cluster's documents with the node's part) is the golden
// one, for a control-plane and a worker join (files of the corpus,
// defaulted and validated as join does) and a control-plane and a worker
// upgrade (the node's part as its files say). The goldens were made by
// the former way, which converted the node's part back to v1beta4 and
// defaulted it as an InitConfiguration a second time; the only difference
// is that a worker no longer gets the control-plane taint in its (unused)
// registration.
func TestNodeConfigurationGolden(t *testing.T) {
	env := fakeEnv()
	join := func(file string) func(t *testing.T) Node {
		return func(t *testing.T) Node {
			docs := readCorpus(t, file)
			j, err := env.JoinConfiguration(docs, DefaultOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return JoinNode(j)
		}
	}
	upgrade := func(controlPlane bool) func(t *testing.T) Node {
		return func(t *testing.T) Node {
			up := env.UpgradeConfiguration(readCorpus(t, "valid-upgrade.yaml"))
			n := Node{
				NodeRegistration: kubeadm.NodeRegistrationOptions{
					Name:            "cp-1",
					CRISocket:       "unix:///run/containerd/containerd.sock",
					ImagePullPolicy: corev1.PullPolicy(up.Apply.ImagePullPolicy),
					ImagePullSerial: up.Apply.ImagePullSerial,
				},
				ControlPlane: controlPlane,
				Timeouts:     up.Timeouts,
			}
			if controlPlane {
				n.LocalAPIEndpoint = kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.5", BindPort: 6443}
			}
			return n
		}
	}
	for _, tc := range []struct {
		name string
		node func(t *testing.T) Node
	}{
		{"join-controlplane", join("valid-join-file-controlplane.yaml")},
		{"join-worker", join("valid-join-token.yaml")},
		{"upgrade-controlplane", upgrade(true)},
		{"upgrade-worker", upgrade(false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := env.NodeConfiguration(context.Background(), clusterDocs(t), tc.node(t))
			if err != nil {
				t.Fatal(err)
			}
			got, err := MarshalInit(cfg)
			if err != nil {
				t.Fatal(err)
			}
			components, err := MarshalDocuments(cfg.ComponentConfigs.Kubelet, cfg.ComponentConfigs.KubeProxy)
			if err != nil {
				t.Fatal(err)
			}
			got = append(append(got, "---\n"...), components...)
			golden := filepath.Join("testdata", "node-"+tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", golden, got)
			}
		})
	}
}
