package kubelet

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
)

// testHostname is the host name of the machine the golden files were made
// on; a node name equal to it needs no --hostname-override.
const testHostname = "vm"

// fakeEnv gives the configuration loader fixed machine facts: upstream's
// defaults on the machine where the golden files were made.
func fakeEnv() config.Environment {
	return config.Environment{
		Hostname:       func() (string, error) { return testHostname, nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP("192.0.2.10"), nil },
		CRISocket:      func() (string, error) { return "unix:///var/run/containerd/containerd.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
		NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:           func(string, ...any) {},
	}
}

// loadInit reads a kubeadm configuration file as "kubeadm init" does.
func loadInit(t *testing.T, path string) *kubeadm.InitConfiguration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := config.Decode(data, config.Lenient)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, config.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeAll writes the kubelet's files for cfg as the kubelet-start phase
// does, into dir.
func writeAll(t *testing.T, dir string, cfg *kubeadm.InitConfiguration, patchesDir, resolvConf string) string {
	t.Helper()
	var out bytes.Buffer
	flags := FlagOptions{NodeRegistration: &cfg.NodeRegistration, Hostname: testHostname}
	if err := WriteFlagsEnv(dir, flags, &out); err != nil {
		t.Fatal(err)
	}
	opts := ConfigOptions{PatchesDir: patchesDir, ResolvConf: resolvConf, CRISocket: cfg.NodeRegistration.CRISocket}
	if err := WriteInstanceConfig(dir, cfg.NodeRegistration.CRISocket, &out); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(dir, cfg.ComponentConfigs.Kubelet, opts, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// listFiles returns "name mode" for every entry of dir, sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, e.Name()+" "+info.Mode().Perm().String())
	}
	sort.Strings(list)
	return list
}

// TestFilesMatchUpstream compares, byte for byte and mode for mode, the
// files written for each testdata/<case>/kubeadm.yaml with those upstream
// kubeadm v1.37.2 wrote for the same file (testdata/<case>/want/, see
// testdata/README.md).
func TestFilesMatchUpstream(t *testing.T) {
	tests := []struct {
		name       string
		resolvConf string // what the init system reported
	}{
		{name: "default"},
		{name: "custom-cri-socket"},
		{name: "node-name"},
		{name: "extra-args"},
		{name: "ipv6"},
		{name: "user-config-patches"},
		{name: "systemd-resolved", resolvConf: SystemdResolvConf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caseDir := filepath.Join("testdata", tt.name)
			cfg := loadInit(t, filepath.Join(caseDir, "kubeadm.yaml"))
			patchesDir := ""
			if _, err := os.Stat(filepath.Join(caseDir, "patches")); err == nil {
				patchesDir = filepath.Join(caseDir, "patches")
			}
			root := t.TempDir()
			dir := filepath.Join(root, "var", "lib", "kubelet")
			writeAll(t, dir, cfg, patchesDir, tt.resolvConf)

			wantDir := filepath.Join(caseDir, "want")
			if got, want := listFiles(t, dir), listFiles(t, wantDir); !reflect.DeepEqual(got, want) {
				t.Errorf("files = %v, want %v", got, want)
			}
			for _, f := range []string{ConfigFile, InstanceConfigFile, FlagsEnvFile} {
				want, err := os.ReadFile(filepath.Join(wantDir, f))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from upstream's:\n--- got\n%s\n--- want\n%s", f, got, want)
				}
			}
			for _, d := range []string{filepath.Join(root, "var"), filepath.Join(root, "var", "lib"), dir} {
				info, err := os.Stat(d)
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != DirMode {
					t.Errorf("%s has mode %v, want %v", d, info.Mode().Perm(), DirMode)
				}
			}
		})
	}
}

func TestWriteIsIdempotent(t *testing.T) {
	cfg := loadInit(t, filepath.Join("testdata", "user-config-patches", "kubeadm.yaml"))
	patchesDir := filepath.Join("testdata", "user-config-patches", "patches")
	dir := filepath.Join(t.TempDir(), "kubelet")
	firstOut := writeAll(t, dir, cfg, patchesDir, "")
	first := readAll(t, dir)
	secondOut := writeAll(t, dir, cfg, patchesDir, "")
	if second := readAll(t, dir); !reflect.DeepEqual(first, second) {
		t.Errorf("a second write changed the files:\n%v\n%v", first, second)
	}
	if firstOut != secondOut {
		t.Errorf("a second write printed something else:\n%s\n---\n%s", firstOut, secondOut)
	}
	// No temporary files left behind.
	if got := listFiles(t, dir); len(got) != 3 {
		t.Errorf("files after two writes = %v", got)
	}
}

func TestWriteFixesModeOfExistingFiles(t *testing.T) {
	cfg := loadInit(t, filepath.Join("testdata", "default", "kubeadm.yaml"))
	dir := t.TempDir()
	for _, f := range []string{ConfigFile, InstanceConfigFile, FlagsEnvFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("stale"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeAll(t, dir, cfg, "", "")
	for _, f := range listFiles(t, dir) {
		if !strings.HasSuffix(f, " -rw-r--r--") {
			t.Errorf("%s: want mode 0644", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); bytes.Contains(b, []byte("stale")) {
		t.Error("config.yaml was not replaced")
	}
}

func TestWriteMessages(t *testing.T) {
	cfg := loadInit(t, filepath.Join("testdata", "user-config-patches", "kubeadm.yaml"))
	dir := filepath.Join(t.TempDir(), "kubelet")
	got := writeAll(t, dir, cfg, filepath.Join("testdata", "user-config-patches", "patches"), "")
	want := []string{
		`[kubelet-start] Writing kubelet environment file with flags to file "` + filepath.Join(dir, FlagsEnvFile) + `"`,
		`[kubelet-start] Writing kubelet configuration to file "` + filepath.Join(dir, InstanceConfigFile) + `"`,
		`[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kubeletconfiguration"`,
		`[patches] Applied patch of type "application/merge-patch+json" to target "kubeletconfiguration"`,
		`[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kubeletconfiguration"`,
		`[kubelet-start] Writing kubelet configuration to file "` + filepath.Join(dir, ConfigFile) + `"`,
	}
	// Keep only the lines this package prints and the patch applications
	// (the patches package reports the folder and files too).
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if strings.HasPrefix(l, "[kubelet-start]") || strings.HasPrefix(l, "[patches] Applied") {
			lines = append(lines, l)
		}
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestFlags(t *testing.T) {
	args := func(kv ...string) []kubeadm.Arg {
		var a []kubeadm.Arg
		for i := 0; i < len(kv); i += 2 {
			a = append(a, kubeadm.Arg{Name: kv[i], Value: kv[i+1]})
		}
		return a
	}
	tests := []struct {
		name string
		opts FlagOptions
		want []kubeadm.Arg
	}{
		{
			name: "node name is the host name, socket node-local",
			opts: FlagOptions{NodeRegistration: &kubeadm.NodeRegistrationOptions{Name: "vm", CRISocket: "unix:///s"}, Hostname: "vm"},
		},
		{
			name: "no node registration at all",
			opts: FlagOptions{Hostname: "vm"},
		},
		{
			name: "the socket is never a flag (instance-config.yaml has it), name override",
			opts: FlagOptions{NodeRegistration: &kubeadm.NodeRegistrationOptions{Name: "n1", CRISocket: "unix:///s"}, Hostname: "vm"},
			want: args("hostname-override", "n1"),
		},
		{
			name: "extra arguments replace kubeadm's of the same name and come after, in order, repeats kept",
			opts: FlagOptions{NodeRegistration: &kubeadm.NodeRegistrationOptions{
				Name: "n1", CRISocket: "unix:///s",
				KubeletExtraArgs: args("b", "1", "container-runtime-endpoint", "x", "container-runtime-endpoint", "y"),
			}, Hostname: "vm"},
			want: args("hostname-override", "n1", "b", "1", "container-runtime-endpoint", "x", "container-runtime-endpoint", "y"),
		},
		{
			name: "an empty extra value still replaces",
			opts: FlagOptions{NodeRegistration: &kubeadm.NodeRegistrationOptions{
				Name: "n1", KubeletExtraArgs: args("hostname-override", ""),
			}, Hostname: "vm"},
			want: args("hostname-override", ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Flags(tt.opts)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Flags = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFlagsEnv(t *testing.T) {
	tests := []struct {
		args []kubeadm.Arg
		want string
	}{
		{nil, "KUBELET_KUBEADM_ARGS=\"\"\n"},
		{[]kubeadm.Arg{{Name: "v", Value: "2"}}, "KUBELET_KUBEADM_ARGS=\"--v=2\"\n"},
		{
			[]kubeadm.Arg{{Name: "a", Value: `x "y" \z`}, {Name: "b", Value: "tab\there"}, {Name: "c", Value: ""}},
			`KUBELET_KUBEADM_ARGS="--a=x \"y\" \\z --b=tab\there --c="` + "\n",
		},
	}
	for _, tt := range tests {
		if got := string(FlagsEnv(tt.args)); got != tt.want {
			t.Errorf("FlagsEnv(%v) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestInstanceConfig(t *testing.T) {
	got := string(InstanceConfig(`unix:///run/a "b"\c.sock`))
	want := `containerRuntimeEndpoint: "unix:///run/a \"b\"\\c.sock"` + "\n"
	if got != want {
		t.Errorf("InstanceConfig = %q, want %q", got, want)
	}
	// It must be YAML saying the same thing.
	var parsed map[string]string
	if err := yaml.Unmarshal([]byte(got), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed["containerRuntimeEndpoint"] != `unix:///run/a "b"\c.sock` {
		t.Errorf("parsed back as %q", parsed["containerRuntimeEndpoint"])
	}
	if err := WriteInstanceConfig(t.TempDir(), "", &bytes.Buffer{}); err == nil {
		t.Error("an empty socket was accepted")
	}
}

func TestConfig(t *testing.T) {
	base := func() *kubeletv1beta1.KubeletConfiguration {
		return &kubeletv1beta1.KubeletConfiguration{ClusterDomain: "cluster.local"}
	}
	userResolv := "/etc/my.conf"
	tests := []struct {
		name  string
		cfg   *kubeletv1beta1.KubeletConfiguration
		opts  ConfigOptions
		check func(t *testing.T, doc map[string]any)
	}{
		{
			name: "type meta filled in when missing",
			cfg:  base(),
			check: func(t *testing.T, doc map[string]any) {
				if doc["apiVersion"] != "kubelet.config.k8s.io/v1beta1" || doc["kind"] != "KubeletConfiguration" {
					t.Errorf("apiVersion/kind = %v/%v", doc["apiVersion"], doc["kind"])
				}
			},
		},
		{
			name: "resolvConf set when none",
			cfg:  base(),
			opts: ConfigOptions{ResolvConf: SystemdResolvConf},
			check: func(t *testing.T, doc map[string]any) {
				if doc["resolvConf"] != SystemdResolvConf {
					t.Errorf("resolvConf = %v", doc["resolvConf"])
				}
			},
		},
		{
			name: "the user's resolvConf kept",
			cfg:  func() *kubeletv1beta1.KubeletConfiguration { c := base(); c.ResolverConfig = &userResolv; return c }(),
			opts: ConfigOptions{ResolvConf: SystemdResolvConf},
			check: func(t *testing.T, doc map[string]any) {
				if doc["resolvConf"] != userResolv {
					t.Errorf("resolvConf = %v", doc["resolvConf"])
				}
			},
		},
		{
			name: "an empty resolvConf from the user is kept empty",
			cfg:  func() *kubeletv1beta1.KubeletConfiguration { c := base(); e := ""; c.ResolverConfig = &e; return c }(),
			opts: ConfigOptions{ResolvConf: SystemdResolvConf},
			check: func(t *testing.T, doc map[string]any) {
				if v, ok := doc["resolvConf"]; ok && v != "" {
					t.Errorf("resolvConf = %v", v)
				}
			},
		},
		{
			name: "without node-local socket the endpoint is the configuration's",
			cfg: func() *kubeletv1beta1.KubeletConfiguration {
				c := base()
				c.ContainerRuntimeEndpoint = "unix:///mine"
				return c
			}(),
			check: func(t *testing.T, doc map[string]any) {
				if doc["containerRuntimeEndpoint"] != "unix:///mine" {
					t.Errorf("containerRuntimeEndpoint = %v", doc["containerRuntimeEndpoint"])
				}
			},
		},
		{
			name: "the node-local socket wins",
			cfg: func() *kubeletv1beta1.KubeletConfiguration {
				c := base()
				c.ContainerRuntimeEndpoint = "unix:///mine"
				return c
			}(),
			opts: ConfigOptions{CRISocket: "unix:///node"},
			check: func(t *testing.T, doc map[string]any) {
				if doc["containerRuntimeEndpoint"] != "unix:///node" {
					t.Errorf("containerRuntimeEndpoint = %v", doc["containerRuntimeEndpoint"])
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := json.Marshal(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Config(tt.cfg, tt.opts, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(tt.cfg); !bytes.Equal(before, after) {
				t.Errorf("Config modified its argument:\n%s\n%s", before, after)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			tt.check(t, doc)
		})
	}
	if _, err := Config(nil, ConfigOptions{}, &bytes.Buffer{}); err == nil {
		t.Error("a nil configuration was accepted")
	}
}

func TestConfigPatchErrorsNameTheTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubeletconfiguration+json.yaml"), []byte("- op: remove\n  path: /nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Config(&kubeletv1beta1.KubeletConfiguration{}, ConfigOptions{PatchesDir: dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "patching the kubelet configuration") {
		t.Errorf("error = %v", err)
	}
}

func TestSetFieldKeepsEverythingElse(t *testing.T) {
	in := []byte("b: 12345678901234567890\na: {x: [1, 2.5]}\nunknown: true\ns: \"0\"\n")
	got, err := setField(in, "containerRuntimeEndpoint", "unix:///x")
	if err != nil {
		t.Fatal(err)
	}
	want := "a:\n  x:\n  - 1\n  - 2.5\nb: 12345678901234567890\ncontainerRuntimeEndpoint: unix:///x\ns: \"0\"\nunknown: true\n"
	if string(got) != want {
		t.Errorf("setField =\n%s\nwant\n%s", got, want)
	}
	if _, err := setField([]byte("- a list\n"), "k", "v"); err == nil {
		t.Error("a list was accepted as a mapping")
	}
}

// readAll returns name -> content of the files in dir.
func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}
