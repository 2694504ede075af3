package upgrade_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
)

// writeKubeletConf writes a kubelet.conf into dir whose embedded client
// certificate (self-signed) is for user cn.
func writeKubeletConf(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	b64 := base64.StdEncoding.EncodeToString
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    server: https://10.0.0.5:6443
    certificate-authority-data: %[1]s
contexts:
- name: system:node:node1@kubernetes
  context:
    cluster: kubernetes
    user: system:node:node1
current-context: system:node:node1@kubernetes
users:
- name: system:node:node1
  user:
    client-certificate-data: %[1]s
    client-key-data: %[2]s
`, b64(certPEM), b64(keyPEM))
	if err := os.WriteFile(filepath.Join(dir, "kubelet.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func commandManifest(component string, args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: kube-system\nspec:\n  containers:\n  - name: %s\n    image: registry.k8s.io/%s:v1.36.2\n    command:\n    - %s\n", component, component, component, component)
	for _, a := range args {
		fmt.Fprintf(&b, "    - %s\n", a)
	}
	return b.String()
}

type nodeDirs struct{ kubernetes, manifests, kubelet string }

func newNodeDirs(t *testing.T, cn string) nodeDirs {
	root := t.TempDir()
	d := nodeDirs{
		kubernetes: filepath.Join(root, "etc-kubernetes"),
		manifests:  filepath.Join(root, "etc-kubernetes", "manifests"),
		kubelet:    filepath.Join(root, "var-lib-kubelet"),
	}
	for _, p := range []string{d.kubernetes, d.manifests, d.kubelet} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeKubeletConf(t, d.kubernetes, cn)
	return d
}

const initialCluster = "node0=https://10.0.0.4:2380,node1=https://10.0.0.5:2380"

func TestReadLocalNodeControlPlane(t *testing.T) {
	d := newNodeDirs(t, "system:node:node1")
	writeFile(t, filepath.Join(d.kubelet, "instance-config.yaml"),
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n")
	writeFile(t, filepath.Join(d.manifests, "kube-apiserver.yaml"),
		commandManifest("kube-apiserver", "--advertise-address=10.0.0.5", "--secure-port=6443", "--etcd-servers=https://127.0.0.1:2379"))
	writeFile(t, filepath.Join(d.manifests, "etcd.yaml"),
		commandManifest("etcd", "--name=node1", "--initial-cluster="+initialCluster, "--initial-cluster-state=existing"))

	n, err := upgrade.ReadLocalNode(d.kubernetes, d.manifests, d.kubelet)
	if err != nil {
		t.Fatalf("ReadLocalNode: %v", err)
	}
	want := upgrade.LocalNode{
		Name:               "node1",
		CRISocket:          "unix:///run/containerd/containerd.sock",
		InstanceConfig:     true,
		ControlPlane:       true,
		Endpoint:           kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.5", BindPort: 6443},
		LocalEtcd:          true,
		EtcdInitialCluster: initialCluster,
	}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("ReadLocalNode =\n %+v\nwant\n %+v", *n, want)
	}
}

// TestReadLocalNodeFirstEtcdMember: a member that started a new etcd
// cluster keeps no --initial-cluster.
func TestReadLocalNodeFirstEtcdMember(t *testing.T) {
	d := newNodeDirs(t, "system:node:cp-a")
	writeFile(t, filepath.Join(d.manifests, "kube-apiserver.yaml"),
		commandManifest("kube-apiserver", "--advertise-address=fd00::5", "--secure-port=8443"))
	writeFile(t, filepath.Join(d.manifests, "etcd.yaml"),
		commandManifest("etcd", "--initial-cluster=cp-a=https://[fd00::5]:2380", "--initial-cluster-state=new"))
	n, err := upgrade.ReadLocalNode(d.kubernetes, d.manifests, d.kubelet)
	if err != nil {
		t.Fatalf("ReadLocalNode: %v", err)
	}
	want := upgrade.LocalNode{
		Name:         "cp-a",
		ControlPlane: true,
		Endpoint:     kubeadm.APIEndpoint{AdvertiseAddress: "fd00::5", BindPort: 8443},
		LocalEtcd:    true,
	}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("ReadLocalNode =\n %+v\nwant\n %+v", *n, want)
	}
}

func TestReadLocalNodeWorker(t *testing.T) {
	d := newNodeDirs(t, "system:node:worker-7")
	n, err := upgrade.ReadLocalNode(d.kubernetes, d.manifests, d.kubelet)
	if err != nil {
		t.Fatalf("ReadLocalNode: %v", err)
	}
	if want := (upgrade.LocalNode{Name: "worker-7"}); !reflect.DeepEqual(*n, want) {
		t.Errorf("ReadLocalNode = %+v, want %+v", *n, want)
	}
}

// TestReadLocalNodeOlderKubeadm: a node set up before instance-config.yaml
// existed gives its CRI socket in kubeadm-flags.env.
func TestReadLocalNodeOlderKubeadm(t *testing.T) {
	d := newNodeDirs(t, "system:node:old-1")
	writeFile(t, filepath.Join(d.kubelet, "kubeadm-flags.env"),
		`KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/crio/crio.sock --node-ip=10.0.0.9"`+"\n")
	n, err := upgrade.ReadLocalNode(d.kubernetes, d.manifests, d.kubelet)
	if err != nil {
		t.Fatalf("ReadLocalNode: %v", err)
	}
	if want := (upgrade.LocalNode{Name: "old-1", CRISocket: "unix:///var/run/crio/crio.sock"}); !reflect.DeepEqual(*n, want) {
		t.Errorf("ReadLocalNode = %+v, want %+v", *n, want)
	}
}

func TestReadLocalNodeErrors(t *testing.T) {
	cases := []struct {
		name  string
		cn    string
		setup func(t *testing.T, d nodeDirs)
		want  string
	}{
		{name: "not a node's certificate", cn: "kubernetes-admin", want: `"kubernetes-admin", not for a node`},
		{name: "empty node name", cn: "system:node:", want: "not for a node"},
		{
			name: "no kubelet.conf", cn: "system:node:node1",
			setup: func(t *testing.T, d nodeDirs) {
				if err := os.Remove(filepath.Join(d.kubernetes, "kubelet.conf")); err != nil {
					t.Fatal(err)
				}
			},
			want: "kubelet's credentials",
		},
		{
			name: "API server without a port", cn: "system:node:node1",
			setup: func(t *testing.T, d nodeDirs) {
				writeFile(t, filepath.Join(d.manifests, "kube-apiserver.yaml"), commandManifest("kube-apiserver", "--advertise-address=10.0.0.5"))
			},
			want: "port",
		},
		{
			name: "unreadable instance configuration", cn: "system:node:node1",
			setup: func(t *testing.T, d nodeDirs) {
				writeFile(t, filepath.Join(d.kubelet, "instance-config.yaml"), "containerRuntimeEndpoint: [oops\n")
			},
			want: "instance-config.yaml",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newNodeDirs(t, tc.cn)
			if tc.setup != nil {
				tc.setup(t, d)
			}
			_, err := upgrade.ReadLocalNode(d.kubernetes, d.manifests, d.kubelet)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadLocalNode = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// A node whose control plane runs as kubeadm's units is a control-plane
// node with a local etcd, read from its units.
func TestReadLocalNodeUnits(t *testing.T) {
	root := t.TempDir()
	for comp, args := range map[string][]string{
		hostprocess.KubeAPIServer: {"--advertise-address=10.0.0.5", "--secure-port=6443"},
		hostprocess.Etcd:          {"--initial-cluster=" + initialCluster, "--initial-cluster-state=existing"},
	} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: append([]string{comp}, args...)}}}}
		data, err := hostprocess.Unit(comp, pod, "/usr/local/bin/"+comp)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, hostprocess.UnitPath(root, comp), string(data))
	}
	n := &upgrade.LocalNode{Name: "node1"}
	if err := n.ReadUnits(root); err != nil {
		t.Fatal(err)
	}
	want := upgrade.LocalNode{Name: "node1", ControlPlane: true, HostProcesses: true, LocalEtcd: true, EtcdInitialCluster: initialCluster,
		Endpoint: kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.5", BindPort: 6443}}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("got %+v, want %+v", *n, want)
	}
	worker := &upgrade.LocalNode{Name: "node2"}
	if err := worker.ReadUnits(t.TempDir()); err != nil || worker.ControlPlane || worker.HostProcesses {
		t.Errorf("a node without units: %+v, %v", *worker, err)
	}
}

// A self-hosted control-plane node is read from its checkpoints; the
// components whose manifest is also in the manifest folder are named.
func TestReadLocalNodeCheckpoints(t *testing.T) {
	kubernetesDir := t.TempDir()
	manifests := filepath.Join(kubernetesDir, "manifests")
	checkpoints := selfhosting.CheckpointDir(kubernetesDir)
	for _, comp := range selfhosting.Components() {
		writeFile(t, selfhosting.CheckpointPath(checkpoints, comp), commandManifest(comp, "--advertise-address=10.0.0.5", "--secure-port=6443"))
	}
	writeFile(t, filepath.Join(manifests, "kube-scheduler.yaml"), commandManifest("kube-scheduler"))
	n := &upgrade.LocalNode{Name: "node1"}
	if err := n.ReadCheckpoints(kubernetesDir, manifests); err != nil {
		t.Fatal(err)
	}
	want := upgrade.LocalNode{Name: "node1", ControlPlane: true, SelfHosted: true, InManifestDir: []string{"kube-scheduler"},
		Endpoint: kubeadm.APIEndpoint{AdvertiseAddress: "10.0.0.5", BindPort: 6443}}
	if !reflect.DeepEqual(*n, want) {
		t.Errorf("got %+v, want %+v", *n, want)
	}
	if err := os.Remove(selfhosting.CheckpointPath(checkpoints, "kube-scheduler")); err != nil {
		t.Fatal(err)
	}
	half := &upgrade.LocalNode{Name: "node1"}
	if err := half.ReadCheckpoints(kubernetesDir, manifests); err != nil || half.SelfHosted || half.ControlPlane {
		t.Errorf("a node without every checkpoint: %+v, %v", *half, err)
	}
}
