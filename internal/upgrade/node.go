package upgrade

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// nodeUserPrefix starts the user name of a kubelet's client certificate.
const nodeUserPrefix = "system:node:"

// LocalNode is what an upgrade learns about this node from its files.
type LocalNode struct {
	// Name is the node's name, from the kubelet's client certificate.
	Name string
	// CRISocket is the container runtime endpoint of instance-config.yaml,
	// or, on a node set up by an older kubeadm that has no such file, of
	// the kubelet's --container-runtime-endpoint flag in kubeadm-flags.env
	// ("" when neither says).
	CRISocket string
	// InstanceConfig is true when instance-config.yaml exists. An upgrade
	// writes it when it does not.
	InstanceConfig bool
	// ControlPlane is true when the node runs a kube-apiserver static Pod;
	// Endpoint is then the address and port it advertises.
	ControlPlane bool
	Endpoint     kubeadm.APIEndpoint
	// LocalEtcd is true when the node runs an etcd static Pod;
	// EtcdInitialCluster is its --initial-cluster when it joined an
	// existing etcd cluster (kept so that its manifest does not change for
	// that alone).
	LocalEtcd          bool
	EtcdInitialCluster string
	// HostProcesses is true when the node's control plane runs as
	// kubeadm's systemd units (HostProcessControlPlane); ControlPlane,
	// Endpoint, LocalEtcd and EtcdInitialCluster are then read from them.
	HostProcesses bool
	// SelfHosted is true when the node keeps the checkpoints of a
	// self-hosted control plane (SelfHosting): the API server's, the
	// controller manager's and the scheduler's. ControlPlane and Endpoint
	// are then read from the API server's checkpoint. InManifestDir names
	// those of them whose manifest is also in the manifest folder (a
	// checkpoint standing in for its DaemonSet Pod, or a pivot not done).
	SelfHosted    bool
	InManifestDir []string
}

// ReadCheckpoints completes n from the checkpoints of a self-hosted
// control plane under kubernetesDir, if the node has all of them.
func (n *LocalNode) ReadCheckpoints(kubernetesDir, manifestDir string) error {
	dir := selfhosting.CheckpointDir(kubernetesDir)
	for _, comp := range selfhosting.Components() {
		if _, err := os.Stat(selfhosting.CheckpointPath(dir, comp)); errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
	}
	n.SelfHosted, n.ControlPlane = true, true
	for _, comp := range selfhosting.Components() {
		if _, err := os.Stat(staticpod.ManifestPath(manifestDir, comp)); err == nil {
			n.InManifestDir = append(n.InManifestDir, comp)
		}
	}
	api, err := staticpod.ReadFlags(selfhosting.CheckpointPath(dir, staticpod.KubeAPIServer))
	if err != nil {
		return err
	}
	n.Endpoint.AdvertiseAddress = api["advertise-address"]
	port, err := strconv.Atoi(api["secure-port"])
	if err != nil {
		return fmt.Errorf("reading the API server's port from its checkpoint: %w", err)
	}
	n.Endpoint.BindPort = int32(port)
	return nil
}

// ReadUnits completes n from kubeadm's units under systemRoot ("" is /)
// when the node has no control-plane manifest: a node whose control plane
// runs as host processes has units instead.
func (n *LocalNode) ReadUnits(systemRoot string) error {
	if n.ControlPlane || n.LocalEtcd {
		return nil
	}
	api, ok, err := readUnitFlags(systemRoot, hostprocess.KubeAPIServer)
	if err != nil {
		return err
	}
	if ok {
		n.HostProcesses, n.ControlPlane = true, true
		n.Endpoint.AdvertiseAddress = api["advertise-address"]
		port, err := strconv.Atoi(api["secure-port"])
		if err != nil {
			return fmt.Errorf("reading the API server's port from its unit: %w", err)
		}
		n.Endpoint.BindPort = int32(port)
	}
	etcdFlags, ok, err := readUnitFlags(systemRoot, hostprocess.Etcd)
	if err != nil {
		return err
	}
	if ok {
		n.HostProcesses, n.LocalEtcd = true, true
		if etcdFlags["initial-cluster-state"] == "existing" {
			n.EtcdInitialCluster = etcdFlags["initial-cluster"]
		}
	}
	return nil
}

// readUnitFlags reads the flags of component's unit; ok is false when the
// node has no unit of kubeadm's for it.
func readUnitFlags(systemRoot, component string) (map[string]string, bool, error) {
	pod, ours, err := hostprocess.ReadUnit(hostprocess.UnitPath(systemRoot, component), component)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !ours) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return staticpod.Flags(pod), true, nil
}

// ReadLocalNode reads this node's kubelet.conf (in kubernetesDir), its
// static Pod manifests and the kubelet's instance configuration.
func ReadLocalNode(kubernetesDir, manifestDir, kubeletDir string) (*LocalNode, error) {
	n := &LocalNode{}
	kubeletConf := filepath.Join(kubernetesDir, "kubelet.conf")
	cert, err := kubeconfig.ClientCertificateOf(kubeletConf)
	if err != nil {
		return nil, fmt.Errorf("finding this node's name from the kubelet's credentials: %w", err)
	}
	name, ok := strings.CutPrefix(cert.Subject.CommonName, nodeUserPrefix)
	if !ok || name == "" {
		return nil, fmt.Errorf("finding this node's name: the client certificate of %s is for %q, not for a node", kubeletConf, cert.Subject.CommonName)
	}
	n.Name = name

	if n.CRISocket, n.InstanceConfig, err = KubeletCRISocket(kubeletDir); err != nil {
		return nil, err
	}

	apiFlags, err := staticpod.ReadFlags(staticpod.ManifestPath(manifestDir, staticpod.KubeAPIServer))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		n.ControlPlane = true
		n.Endpoint.AdvertiseAddress = apiFlags["advertise-address"]
		port, err := strconv.Atoi(apiFlags["secure-port"])
		if err != nil {
			return nil, fmt.Errorf("reading the API server's port from its manifest: %w", err)
		}
		n.Endpoint.BindPort = int32(port)
	}

	etcdFlags, err := staticpod.ReadFlags(staticpod.ManifestPath(manifestDir, staticpod.Etcd))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		n.LocalEtcd = true
		if etcdFlags["initial-cluster-state"] == "existing" {
			n.EtcdInitialCluster = etcdFlags["initial-cluster"]
		}
	}
	return n, nil
}

// KubeletCRISocket reads the container runtime endpoint this node's kubelet
// uses from its folder: instance-config.yaml's (instance is then true),
// or, on a node an older kubeadm set up, the --container-runtime-endpoint
// flag of kubeadm-flags.env. socket is "" when neither says.
func KubeletCRISocket(kubeletDir string) (socket string, instance bool, err error) {
	data, err := boundedread.ReadFile(filepath.Join(kubeletDir, kubelet.InstanceConfigFile), boundedread.MaxFile)
	switch {
	case err == nil:
		var inst struct {
			ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
		}
		if err := yaml.Unmarshal(data, &inst); err != nil {
			return "", false, fmt.Errorf("reading %s: %w", kubelet.InstanceConfigFile, err)
		}
		return inst.ContainerRuntimeEndpoint, true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, err
	}
	env, err := kubelet.ReadFlagsEnv(kubeletDir)
	if err != nil {
		return "", false, err
	}
	flags, _ := kubelet.ParseFlagsEnv(env)
	socket, _ = kubelet.FlagValue(flags, kubelet.ContainerRuntimeEndpointFlag)
	return socket, false, nil
}
