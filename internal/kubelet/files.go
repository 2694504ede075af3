package kubelet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/patches"
)

// Names and modes of the files kubeadm writes for the kubelet.
const (
	// ConfigFile holds the KubeletConfiguration (the kubelet's --config).
	ConfigFile = "config.yaml"
	// InstanceConfigFile holds the node-local part of the configuration.
	InstanceConfigFile = "instance-config.yaml"
	// FlagsEnvFile holds FlagsEnvVar, sourced by the kubelet's service unit.
	FlagsEnvFile = "kubeadm-flags.env"
	// FlagsEnvVar is the variable FlagsEnvFile sets.
	FlagsEnvVar = "KUBELET_KUBEADM_ARGS"

	// PatchTarget names the KubeletConfiguration among patch targets.
	PatchTarget = patches.TargetKubeletConfiguration

	// SystemdResolvConf is the resolver file the kubelet is pointed at
	// when systemd-resolved runs (the stub in /etc/resolv.conf would make
	// pods loop their DNS queries back to themselves).
	SystemdResolvConf = "/run/systemd/resolve/resolv.conf"

	// FileMode is the mode of every file written here, DirMode that of a
	// folder created for them.
	FileMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o700
)

// Type of the patch that merges the node-local settings, as reported.
const strategicMergePatchType = "application/strategic-merge-patch+json"

// Kubelet flag names kubeadm sets itself.
const (
	// ContainerRuntimeEndpointFlag carries the CRI socket when
	// instance-config.yaml does not, as older kubeadm releases always did.
	ContainerRuntimeEndpointFlag = "container-runtime-endpoint"
	flagHostnameOverride         = "hostname-override"
)

// ConfigOptions adjust the KubeletConfiguration when it is written.
type ConfigOptions struct {
	// PatchesDir holds the user's patch files ("" = none). Those for the
	// "kubeletconfiguration" target are applied.
	PatchesDir string
	// CRISocket, when set, is the node-local container runtime endpoint
	// (instance-config.yaml), merged in after the user's patches so it wins.
	CRISocket string
	// ResolvConf is used as resolvConf when the configuration sets none
	// ("" leaves it unset). See Service.ResolvConf.
	ResolvConf string
	// Mode is the mode config.yaml is written with; 0 means FileMode (the
	// CISHardening feature gate asks 0600).
	Mode os.FileMode
}

// ConfigMode is the mode config.yaml gets: opts.Mode, else FileMode.
func (opts ConfigOptions) ConfigMode() os.FileMode {
	if opts.Mode != 0 {
		return opts.Mode
	}
	return FileMode
}

// Config renders the KubeletConfiguration as config.yaml holds it: cfg
// (not modified) marshalled with every field the type always carries,
// resolvConf filled in from opts, then the user's patches, then the
// node-local settings. out receives the patch messages. The result is the
// same for the same inputs.
func Config(cfg *kubeletv1beta1.KubeletConfiguration, opts ConfigOptions, out io.Writer) ([]byte, error) {
	if cfg == nil {
		return nil, fmt.Errorf("rendering the kubelet configuration: no configuration given")
	}
	c := kubeadm.KubeletDocument(cfg)
	if c.ResolverConfig == nil && opts.ResolvConf != "" {
		r := opts.ResolvConf
		c.ResolverConfig = &r
	}
	doc, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("marshalling the kubelet configuration: %w", err)
	}
	if opts.PatchesDir != "" {
		doc, err = patches.Apply(opts.PatchesDir, PatchTarget, doc, out)
		if err != nil {
			return nil, fmt.Errorf("patching the kubelet configuration: %w", err)
		}
	}
	if opts.CRISocket != "" {
		doc, err = setField(doc, "containerRuntimeEndpoint", opts.CRISocket)
		if err != nil {
			return nil, fmt.Errorf("merging the node-local settings into the kubelet configuration: %w", err)
		}
		fmt.Fprintf(out, "[patches] Applied patch of type %q to target %q\n", strategicMergePatchType, PatchTarget)
	}
	return doc, nil
}

// WriteConfig writes config.yaml into dir (see Config). Idempotent.
func WriteConfig(dir string, cfg *kubeletv1beta1.KubeletConfiguration, opts ConfigOptions, out io.Writer) error {
	doc, err := Config(cfg, opts, out)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, ConfigFile)
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet configuration to file %q\n", path)
	return writeIn(dir, path, doc, opts.ConfigMode())
}

// InstanceConfig renders instance-config.yaml: the node-local settings,
// today only the container runtime endpoint.
func InstanceConfig(criSocket string) []byte {
	return []byte("containerRuntimeEndpoint: " + strconv.Quote(criSocket) + "\n")
}

// WriteInstanceConfig writes instance-config.yaml into dir. Idempotent.
func WriteInstanceConfig(dir, criSocket string, out io.Writer) error {
	if criSocket == "" {
		return fmt.Errorf("writing %s: no container runtime endpoint given", filepath.Join(dir, InstanceConfigFile))
	}
	return writeFile(dir, InstanceConfigFile, InstanceConfig(criSocket), out)
}

// FlagOptions are what the kubelet's command-line flags are made of.
type FlagOptions struct {
	// NodeRegistration gives the node name, the CRI socket and the extra
	// kubelet arguments.
	NodeRegistration *kubeadm.NodeRegistrationOptions
	// Hostname is this machine's host name, lower case; when the node name
	// differs the kubelet is told the node name with --hostname-override.
	Hostname string
}

// Flags returns the kubelet flags for kubeadm-flags.env: kubeadm's own
// (sorted by name) except those the extra arguments name, then the extra
// arguments in their order, repeats included.
func Flags(opts FlagOptions) []kubeadm.Arg {
	nr := opts.NodeRegistration
	if nr == nil {
		nr = &kubeadm.NodeRegistrationOptions{}
	}
	var defaults []kubeadm.Arg
	if nr.Name != "" && nr.Name != opts.Hostname {
		defaults = append(defaults, kubeadm.Arg{Name: flagHostnameOverride, Value: nr.Name})
	}
	sort.SliceStable(defaults, func(i, j int) bool { return defaults[i].Name < defaults[j].Name })

	overridden := make(map[string]bool, len(nr.KubeletExtraArgs))
	for _, a := range nr.KubeletExtraArgs {
		overridden[a.Name] = true
	}
	args := make([]kubeadm.Arg, 0, len(defaults)+len(nr.KubeletExtraArgs))
	for _, a := range defaults {
		if !overridden[a.Name] {
			args = append(args, a)
		}
	}
	return append(args, nr.KubeletExtraArgs...)
}

// FlagsEnv renders kubeadm-flags.env for args: one line setting
// FlagsEnvVar to the "--name=value" flags, joined by spaces and quoted as a
// whole (Go quoting: \" and \\ escaped, values are not quoted one by one).
func FlagsEnv(args []kubeadm.Arg) []byte {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = "--" + a.Name + "=" + a.Value
	}
	return []byte(FlagsEnvVar + "=" + strconv.Quote(strings.Join(parts, " ")) + "\n")
}

// WriteFlagsEnv writes kubeadm-flags.env into dir. Idempotent.
func WriteFlagsEnv(dir string, opts FlagOptions, out io.Writer) error {
	path := filepath.Join(dir, FlagsEnvFile)
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet environment file with flags to file %q\n", path)
	return writeIn(dir, path, FlagsEnv(Flags(opts)), FileMode)
}

// writeFile announces and writes one configuration file of the kubelet.
func writeFile(dir, name string, data []byte, out io.Writer) error {
	path := filepath.Join(dir, name)
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet configuration to file %q\n", path)
	return writeIn(dir, path, data, FileMode)
}

// writeIn creates dir when missing and writes path atomically with mode.
func writeIn(dir, path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("creating the kubelet folder %s: %w", dir, err)
	}
	return atomicfile.Write(path, data, mode)
}

// setField sets a top-level field of a YAML mapping, keeping every other
// field as it is (unknown ones included, numbers exact), and returns the
// mapping as YAML with sorted keys.
func setField(doc []byte, key, value string) ([]byte, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	m[key] = value
	j, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}
