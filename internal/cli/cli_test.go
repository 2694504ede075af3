package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/exitcode"
)

// run executes the command tree with args and returns stdout, stderr and
// the exit code main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if err != nil {
		exitcode.Print(&errOut, err)
	}
	return out.String(), errOut.String(), exitcode.Of(err)
}

func TestVersion(t *testing.T) {
	out, _, code := run(t, "version", "-o", "short")
	if code != 0 || strings.TrimSpace(out) != "v1.37.2" {
		t.Fatalf("short: %q (code %d)", out, code)
	}
	out, _, _ = run(t, "version", "-o", "json")
	var v struct {
		ClientVersion map[string]string `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.ClientVersion["gitVersion"] != "v1.37.2" || v.ClientVersion["minor"] != "37" || v.ClientVersion["projectVersion"] == "" {
		t.Fatalf("json: %v", v.ClientVersion)
	}
	out, _, _ = run(t, "version", "-o", "yaml")
	if !strings.Contains(out, "gitVersion: v1.37.2") {
		t.Fatalf("yaml: %s", out)
	}
	out, _, _ = run(t, "version")
	if !strings.HasPrefix(out, "kubeadm version: &version.Info{") {
		t.Fatalf("default: %s", out)
	}
	if _, _, code := run(t, "version", "-o", "xml"); code == 0 {
		t.Fatal("an unknown output format must fail")
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, _, code := run(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "kubeadm") {
			t.Errorf("%s: code %d, %d bytes", sh, code, len(out))
		}
	}
	if _, _, code := run(t, "completion"); code == 0 {
		t.Error("completion without a shell must fail")
	}
	if _, _, code := run(t, "completion", "tcsh"); code == 0 {
		t.Error("an unknown shell must fail")
	}
}

func TestTokenGenerate(t *testing.T) {
	out, _, code := run(t, "token", "generate")
	if code != 0 || !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}\n$`).MatchString(out) {
		t.Fatalf("token generate: %q (code %d)", out, code)
	}
}

func TestPrintDefaults(t *testing.T) {
	out, _, code := run(t, "config", "print", "init-defaults", "--component-configs", "KubeletConfiguration,KubeProxyConfiguration")
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	docs := strings.Split(out, "---\n")
	if len(docs) != 4 {
		t.Fatalf("want 4 documents, got %d:\n%s", len(docs), out)
	}
	var init map[string]any
	if err := yaml.Unmarshal([]byte(docs[0]), &init); err != nil {
		t.Fatal(err)
	}
	if init["kind"] != "InitConfiguration" {
		t.Fatalf("first document: %v", init["kind"])
	}
	nr := init["nodeRegistration"].(map[string]any)
	if _, ok := nr["taints"]; !ok || nr["taints"] != nil {
		t.Errorf("taints should be printed as null, got %v", nr)
	}
	if !strings.Contains(docs[2], "clusterDNS:\n- 10.96.0.10") {
		t.Errorf("kubelet defaults lack clusterDNS:\n%s", docs[2])
	}
	if _, _, code := run(t, "config", "print", "init-defaults", "--component-configs", "Foo"); code == 0 {
		t.Error("an unknown component config must fail")
	}
	for _, k := range []string{"join-defaults", "reset-defaults", "upgrade-defaults"} {
		if out, _, code := run(t, "config", "print", k); code != 0 || !strings.Contains(out, "apiVersion: kubeadm.k8s.io/v1beta4") {
			t.Errorf("%s: code %d\n%s", k, code, out)
		}
	}
}

func TestValidateExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n")
	if out, errOut, code := run(t, "config", "validate", "--config", good); code != 0 {
		t.Fatalf("valid file: code %d\n%s%s", code, out, errOut)
	}
	bad := write("bad.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\nencryptionAlgorithm: RSA-1024\n")
	_, errOut, code := run(t, "config", "validate", "--config", bad)
	if code != exitcode.Validation || !strings.Contains(errOut, "encryptionAlgorithm") || !strings.Contains(errOut, "bad.yaml") {
		t.Fatalf("invalid file: code %d, %q", code, errOut)
	}
	unknown := write("unknown.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\nfoo: 1\n")
	_, errOut, code = run(t, "config", "validate", "--config", unknown)
	if code != exitcode.Validation || !strings.Contains(errOut, `"foo"`) {
		t.Fatalf("unknown field: code %d, %q", code, errOut)
	}
}

func TestImagesList(t *testing.T) {
	out, _, code := run(t, "config", "images", "list", "--kubernetes-version", "v1.36.3", "-o", "json")
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	var doc struct {
		Kind   string   `json:"kind"`
		Images []string `json:"images"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"registry.k8s.io/kube-apiserver:v1.36.3",
		"registry.k8s.io/kube-controller-manager:v1.36.3",
		"registry.k8s.io/kube-scheduler:v1.36.3",
		"registry.k8s.io/kube-proxy:v1.36.3",
		"registry.k8s.io/coredns/coredns:v1.14.6",
		"registry.k8s.io/pause:3.10.2",
		"registry.k8s.io/etcd:3.7.0-0",
	}
	if doc.Kind != "Images" || strings.Join(doc.Images, ",") != strings.Join(want, ",") {
		t.Fatalf("images: %+v", doc)
	}
}

func TestInitRefusesFlagsMixedWithConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init", "--pod-network-cidr", "10.0.0.0/16", "--skip-phases", "preflight"}, "[pod-network-cidr]"},
		{[]string{"init", "--feature-gates", "RootlessControlPlane=true", "--dry-run"}, "[feature-gates]"},
		// A phase command sees the parent's flags through its own flag set.
		{[]string{"init", "phase", "certs", "apiserver", "--apiserver-advertise-address", "192.0.2.1"}, "[apiserver-advertise-address]"},
		{[]string{"init", "phase", "kubeconfig", "admin", "--control-plane-endpoint", "lb:6443"}, "[control-plane-endpoint]"},
	} {
		_, errOut, code := run(t, append(c.args, "--config", p)...)
		if code != exitcode.Generic || !strings.Contains(errOut, "can not mix '--config' with arguments "+c.want) {
			t.Errorf("%v: code %d: %s", c.args, code, errOut)
		}
	}
}

func TestInitUnknownSkipPhase(t *testing.T) {
	_, errOut, code := run(t, "init", "--skip-phases", "nope", "--kubernetes-version", "v1.36.3")
	if code == 0 || !strings.Contains(errOut, "nope") {
		t.Fatalf("code %d: %s", code, errOut)
	}
}

func TestValidationNeverPrintsSecrets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "join.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    token: abcdef.TOPSECRETVALUE1
    apiServerEndpoint: 192.0.2.1:6443
    unsafeSkipCAVerification: true
  tlsBootstrapToken: abcdef.TOPSECRETVALUE2
controlPlane:
  certificateKey: TOPSECRETKEY3
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "config", "validate", "--config", p)
	if code != exitcode.Validation {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if strings.Contains(out+errOut, "TOPSECRET") {
		t.Fatalf("a secret reached the output:\n%s%s", out, errOut)
	}
	for _, path := range []string{"discovery.bootstrapToken.token", "discovery.tlsBootstrapToken", "controlPlane.certificateKey"} {
		if !strings.Contains(errOut, path) {
			t.Errorf("the error should still name %s:\n%s", path, errOut)
		}
	}
}

// With an external CA (its certificate without its key) --upload-certs is
// refused before any phase runs, as upstream's init refuses it: the
// Secret could not carry the key joining control-plane nodes need.
func TestInitUploadCertsRefusesExternalCA(t *testing.T) {
	for _, ca := range []string{"ca", "front-proxy-ca"} {
		t.Run(ca, func(t *testing.T) {
			dir := t.TempDir()
			if _, errOut, code := run(t, "init", "phase", "certs", ca, "--cert-dir", dir, "--kubernetes-version", "v1.36.3"); code != 0 {
				t.Fatalf("making the CA: exit %d: %s", code, errOut)
			}
			if err := os.Remove(filepath.Join(dir, ca+".key")); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(cfg, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\ncertificatesDir: "+dir+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			all := "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane,upload-config,upload-certs," +
				"mark-control-plane,bootstrap-token,kubelet-finalize,addon,certs-renewal,show-join-command"
			for _, args := range [][]string{
				{"init", "--upload-certs", "--cert-dir", dir, "--kubernetes-version", "v1.36.3", "--skip-phases", all},
				{"init", "phase", "upload-certs", "--upload-certs", "--config", cfg, "--kubeconfig", filepath.Join(dir, "none.conf")},
			} {
				out, errOut, code := run(t, args...)
				if code != exitcode.Generic || !strings.Contains(errOut, "--upload-certs cannot be used with an external CA") ||
					!strings.Contains(errOut, filepath.Join(dir, ca+".key")) {
					t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args[:2], code, out, errOut)
				}
				if strings.Contains(out, "[upload-certs]") {
					t.Errorf("%v: the phase ran:\n%s", args[:2], out)
				}
			}
			if after := snapshot(t, dir); len(after) != len(before) {
				t.Errorf("files changed in %s: %v", dir, after)
			}
		})
	}
}

// A patches folder that cannot be read is refused before any phase runs
// (upstream's init finds out after writing the certificates).
func TestUnreadablePatchesRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "etcd+nosuchtype.yaml"), []byte("a: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	all := "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane,upload-config,upload-certs," +
		"mark-control-plane,bootstrap-token,kubelet-finalize,addon,certs-renewal,show-join-command"
	for name, patchesDir := range map[string]string{"missing": filepath.Join(dir, "none"), "unknown patch type": bad} {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{
				{"init", "--patches", patchesDir, "--kubernetes-version", "v1.36.3", "--skip-phases", all},
				{"upgrade", "node", "--patches", patchesDir, "--kubeconfig", filepath.Join(t.TempDir(), "none.conf")},
			} {
				out, errOut, code := run(t, args...)
				if code != exitcode.Generic || !strings.Contains(errOut, patchesDir) {
					t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args[:2], code, out, errOut)
				}
			}
		})
	}
}

// TestCISHardeningWithRootlessRefused: the two gates cannot both be on;
// init says so as a validation error before doing anything.
func TestCISHardeningWithRootlessRefused(t *testing.T) {
	_, errOut, code := run(t, "init", "--feature-gates", "CISHardening=true,RootlessControlPlane=true", "--kubernetes-version", "v1.36.3", "--dry-run")
	if code != exitcode.Validation || !strings.Contains(errOut, "CISHardening and RootlessControlPlane cannot both be on") {
		t.Fatalf("code %d: %s", code, errOut)
	}
}

// TestAlphaGroup: "kubeadm alpha" exists as upstream's (its help, exit 0)
// and holds the self-hosting commands upstream had there until v1.19; the
// checkpointer is hidden.
func TestAlphaGroup(t *testing.T) {
	for _, args := range [][]string{{"alpha"}, {"alpha", "--help"}, {"alpha", "nosuch"}} {
		out, errOut, code := run(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Experimental") || !strings.Contains(out, "selfhosting") {
			t.Errorf("kubeadm %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	out, _, _ := run(t, "alpha", "selfhosting", "--help")
	if !strings.Contains(out, "  pivot ") || !strings.Contains(out, "  unpivot ") || strings.Contains(out, "checkpointer") {
		t.Errorf("kubeadm alpha selfhosting --help:\n%s", out)
	}
	out, _, _ = run(t, "--help")
	if !regexp.MustCompile(`(?m)^  alpha +Experimental commands$`).MatchString(out) {
		t.Errorf("the root's help does not list alpha:\n%s", out)
	}
}

// TestPivotAsksFirst: without --force, pivot and unpivot change nothing
// unless the answer is yes.
func TestPivotAsksFirst(t *testing.T) {
	for _, verb := range []string{"pivot", "unpivot"} {
		_, errOut, code := run(t, "alpha", "selfhosting", verb)
		if code != exitcode.Generic || !strings.Contains(errOut, verb+" aborted: nothing was changed") {
			t.Errorf("%s: exit %d: %s", verb, code, errOut)
		}
	}
}

// TestSelfHostingWithHostProcessesRefused: host processes have no static
// Pods to turn into DaemonSets.
func TestSelfHostingWithHostProcessesRefused(t *testing.T) {
	_, errOut, code := run(t, "init", "--feature-gates", "SelfHosting=true,HostProcessControlPlane=true", "--kubernetes-version", "v1.36.3", "--dry-run")
	if code != exitcode.Validation || !strings.Contains(errOut, "HostProcessControlPlane and SelfHosting cannot both be on") {
		t.Fatalf("code %d: %s", code, errOut)
	}
}
