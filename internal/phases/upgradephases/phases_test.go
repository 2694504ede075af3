package upgradephases

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/upgrade"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// phaseNames flattens a phase tree into "parent/child" names, in order.
func phaseNames(prefix string, phases []workflow.Phase[*Data]) []string {
	var out []string
	for _, p := range phases {
		name := prefix + strings.Fields(p.Name)[0]
		out = append(out, name)
		out = append(out, phaseNames(name+"/", p.Phases)...)
	}
	return out
}

func TestPhaseNames(t *testing.T) {
	cases := []struct {
		name   string
		phases []workflow.Phase[*Data]
		want   []string
	}{
		{
			name:   "apply",
			phases: ApplyPhases(),
			want: []string{
				"preflight",
				"control-plane",
				"upload-config", "upload-config/all", "upload-config/kubeadm", "upload-config/kubelet",
				"kubeconfig",
				"kubelet-config",
				"bootstrap-token",
				"addon", "addon/all", "addon/coredns", "addon/kube-proxy",
				"post-upgrade",
			},
		},
		{
			name:   "node",
			phases: NodePhases(),
			want: []string{
				"preflight",
				"control-plane",
				"kubeconfig",
				"kubelet-config",
				"addon", "addon/all", "addon/coredns", "addon/kube-proxy",
				"post-upgrade",
			},
		},
	}
	for _, tc := range cases {
		got := phaseNames("", tc.phases)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s phases:\n got  %v\n want %v", tc.name, got, tc.want)
		}
		for _, p := range tc.phases {
			if p.Short == "" {
				t.Errorf("%s phase %s has no description", tc.name, p.Name)
			}
			if p.Run == nil && len(p.Phases) == 0 {
				t.Errorf("%s phase %s does nothing", tc.name, p.Name)
			}
		}
	}
}

func TestConfirm(t *testing.T) {
	cases := []struct {
		name               string
		yes, force, dryRun bool
		answer             bool
		wantErr            string // "" for no error
		wantPrompt         bool
	}{
		{name: "answered no", wantErr: "--yes", wantPrompt: true},
		{name: "answered yes", answer: true, wantPrompt: true},
		{name: "--yes", yes: true},
		{name: "--force", force: true},
		{name: "--dry-run", dryRun: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var question string
			d := &Data{
				Cfg:    &kubeadm.InitConfiguration{ClusterConfiguration: kubeadm.ClusterConfiguration{KubernetesVersion: "v1.36.3"}},
				Yes:    tc.yes,
				Force:  tc.force,
				DryRun: tc.dryRun,
				Out:    &bytes.Buffer{},
				Confirm: func(q string) bool {
					question = q
					return tc.answer
				},
			}
			err := confirm(d)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("confirm = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("confirm = %v, want an error mentioning %q", err, tc.wantErr)
			}
			if prompted := strings.Contains(question, "v1.36.3? [y/N]"); prompted != tc.wantPrompt {
				t.Errorf("prompted: %v, want %v (question %q)", prompted, tc.wantPrompt, question)
			}
		})
	}
}

// brokenKubeletHost is a root host whose kubelet cannot tell its version;
// nothing else of it may be used.
type brokenKubeletHost struct{ preflight.Host }

func (brokenKubeletHost) EffectiveUID() int { return 0 }
func (brokenKubeletHost) Command(context.Context, string, ...string) ([]byte, error) {
	return nil, errors.New("no kubelet here")
}

// TestNodeChecksRunSystemVerification: apply and node run the system
// verification as upstream does, under its name, so that it fails the
// upgrade unless ignored.
func TestNodeChecksRunSystemVerification(t *testing.T) {
	var out bytes.Buffer
	d := &Data{Host: brokenKubeletHost{}, Out: &out, IgnorePreflightErrors: sets.New[string]()}
	err := runNodeChecks(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "[ERROR SystemVerification]") || !strings.Contains(err.Error(), "no kubelet here") {
		t.Fatalf("runNodeChecks with a broken kubelet = %v", err)
	}
	out.Reset()
	d.IgnorePreflightErrors = sets.New("SystemVerification")
	if err := runNodeChecks(context.Background(), d); err != nil {
		t.Fatalf("with SystemVerification ignored: %v", err)
	}
	if !strings.Contains(out.String(), "[WARNING SystemVerification]") {
		t.Errorf("the ignored failure was not printed as a warning:\n%s", out.String())
	}
}

// A self-hosted control-plane node upgrades when its checkpoints are
// there and none of them stands in for its DaemonSet Pod; otherwise the
// upgrade is refused, ignorable or not: it would write static Pod
// manifests the DaemonSets then run a second time, or the new DaemonSet
// Pods would not get the ports. A worker of such a cluster upgrades.
func TestNodeChecksSelfHosting(t *testing.T) {
	cfg := &kubeadm.InitConfiguration{}
	cfg.FeatureGates = map[string]bool{selfhosting.Gate: true}
	base := Data{Host: brokenKubeletHost{}, Out: &bytes.Buffer{}, IgnorePreflightErrors: sets.New("all"), Cfg: cfg,
		KubernetesDir: "/etc/kubernetes", ManifestDir: "/etc/kubernetes/manifests"}
	for _, tc := range []struct {
		name string
		node upgrade.LocalNode
		want string
	}{
		{"a worker", upgrade.LocalNode{}, ""},
		{"the self-hosted control-plane node", upgrade.LocalNode{ControlPlane: true, SelfHosted: true}, ""},
		{"a control-plane node without checkpoints", upgrade.LocalNode{ControlPlane: true}, "no checkpoints"},
		{"a checkpoint standing in", upgrade.LocalNode{ControlPlane: true, SelfHosted: true, InManifestDir: []string{"kube-scheduler"}}, "beside their checkpoints"},
	} {
		for _, apply := range []bool{false, true} {
			d := base
			d.Node, d.Apply = &tc.node, apply
			err := runNodeChecks(context.Background(), &d)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s (apply %v): %v", tc.name, apply, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Of(err) != exitcode.Preflight):
				t.Errorf("%s (apply %v): %v, want a preflight error about %q", tc.name, apply, err, tc.want)
			}
		}
	}
}

// programHost is a root host whose PATH holds programs, each printing
// version for --version.
type programHost struct {
	brokenKubeletHost
	programs map[string]string
}

func (h programHost) LookPath(f string) (string, error) {
	if _, ok := h.programs[f]; ok {
		return "/usr/local/bin/" + f, nil
	}
	return "", errors.New("not found")
}

func (h programHost) Command(_ context.Context, path string, _ ...string) ([]byte, error) {
	if v, ok := h.programs[filepath.Base(path)]; ok {
		return []byte(v), nil
	}
	return nil, errors.New("no kubelet here")
}

// On a control-plane node of host processes, the upgrade's preflight
// wants the target version's programs, under the versioned name or the
// bare one; a worker of such a cluster needs none.
func TestNodeChecksHostProcessPrograms(t *testing.T) {
	cfg := &kubeadm.InitConfiguration{}
	cfg.KubernetesVersion = "v1.37.2"
	cfg.FeatureGates = map[string]bool{hostprocess.Gate: true}
	host := programHost{programs: map[string]string{
		"kube-apiserver-v1.37.2": "Kubernetes v1.37.2", "kube-apiserver": "Kubernetes v1.36.3",
		"kube-controller-manager": "Kubernetes v1.36.3",
	}}
	d := &Data{Host: host, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, IgnorePreflightErrors: sets.New("SystemVerification"), Cfg: cfg,
		Node: &upgrade.LocalNode{}, SystemRoot: t.TempDir()}
	if err := runNodeChecks(context.Background(), d); err != nil {
		t.Errorf("a worker: %v", err)
	}
	d.Node = &upgrade.LocalNode{ControlPlane: true, HostProcesses: true}
	err := runNodeChecks(context.Background(), d)
	if err == nil {
		t.Fatal("a control-plane node without the new programs passed")
	}
	msg := err.Error()
	for _, want := range []string{
		"[ERROR ControlPlaneBinary-kube-controller-manager]: /usr/local/bin/kube-controller-manager is version 1.36.3; the cluster needs 1.37.2",
		"[ERROR ControlPlaneBinary-kube-scheduler]: kube-scheduler was not found in the system path as kube-scheduler-v1.37.2 or kube-scheduler",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "ControlPlaneBinary-kube-apiserver") {
		t.Errorf("the versioned kube-apiserver was not taken:\n%s", msg)
	}
}

// TestNodeChecksRefuseDuringCARotation: no upgrade while the controller
// manager signs with the copy "certs rotate-ca" made, ignorable or not.
func TestNodeChecksRefuseDuringCARotation(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rotate-ca"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rotate-ca", "signer.crt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Data{Host: brokenKubeletHost{}, Out: &bytes.Buffer{}, IgnorePreflightErrors: sets.New("all"), CertDir: dir}
	err := runNodeChecks(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "a CA rotation is under way") {
		t.Fatalf("got %v", err)
	}
}

// noInitHost is a machine with neither systemd nor OpenRC.
type noInitHost struct{}

func (noInitHost) Exists(string) bool { return false }
func (noInitHost) Run(context.Context, string, ...string) ([]byte, error) {
	return nil, errors.New("no init system here")
}

// TestOlderNodeMigration: on a node an older kubeadm set up (CRI socket
// as a kubelet flag and a Node annotation, no instance-config.yaml),
// kubelet-config writes instance-config.yaml with that socket and removes
// the annotation, and post-upgrade removes the flag; a dry run shows them
// and changes nothing; a second run changes nothing.
func TestOlderNodeMigration(t *testing.T) {
	const socket = "unix:///var/run/crio/crio.sock"
	flagsEnv := `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=` + socket + ` --node-ip=10.0.0.9"` + "\n"
	var api *fake.Clientset
	annotated := func(t *testing.T) bool {
		t.Helper()
		n, err := api.CoreV1().Nodes().Get(context.Background(), "old-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, ok := n.Annotations[upgrade.CRISocketAnnotation]
		return ok
	}
	setup := func(t *testing.T, dryRun bool) (*Data, *bytes.Buffer) {
		root := t.TempDir()
		api = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        "old-1",
			Annotations: map[string]string{upgrade.CRISocketAnnotation: socket, "other": "kept"},
		}})
		d := &Data{
			KubernetesDir: filepath.Join(root, "etc-kubernetes"),
			KubeletDir:    filepath.Join(root, "var-lib-kubelet"),
			DryRun:        dryRun,
			Service:       noInitHost{},
			Node:          &upgrade.LocalNode{Name: "old-1"},
			Cfg:           &kubeadm.InitConfiguration{},
		}
		d.Cfg.NodeRegistration.CRISocket = socket
		d.Cfg.ComponentConfigs.Kubelet = &kubeletv1beta1.KubeletConfiguration{
			TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		}
		writeTestFile(t, filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile), flagsEnv)
		var err error
		if d.Node.CRISocket, d.Node.InstanceConfig, err = upgrade.KubeletCRISocket(d.KubeletDir); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		d.Out = &out
		d.Client = api
		if dryRun {
			d.Client = apiclient.DryRunClient(&out, api)
		}
		return d, &out
	}
	run := func(t *testing.T, d *Data) {
		t.Helper()
		if err := runKubeletConfig(context.Background(), d); err != nil {
			t.Fatalf("kubelet-config: %v", err)
		}
		if err := dropCRISocketFlag(d); err != nil {
			t.Fatalf("post-upgrade: %v", err)
		}
	}

	t.Run("dry run", func(t *testing.T) {
		d, out := setup(t, true)
		d.DryRunDir = t.TempDir()
		run(t, d)
		// Copies of what it would write, flat, as upstream's dry-run folder.
		for name, want := range map[string]string{
			kubelet.InstanceConfigFile: string(kubelet.InstanceConfig(socket)),
			kubelet.FlagsEnvFile:       `KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.9"` + "\n",
			kubelet.ConfigFile:         "containerRuntimeEndpoint: " + socket,
		} {
			if got := readTestFile(t, filepath.Join(d.DryRunDir, name)); !strings.Contains(got, want) {
				t.Errorf("the dry-run folder's %s = %q, want it to hold %q", name, got, want)
			}
		}
		// As upstream's upgrade node: each file in the dry-run block form,
		// and the phase's closing line.
		for _, want := range []string{
			`[dryrun] Would write file "` + filepath.Join(d.KubeletDir, kubelet.ConfigFile) + `" with content:` + "\napiVersion: kubelet.config.k8s.io/v1beta1\n",
			`[dryrun] Would write file "` + filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile) + `" with content:` + "\n",
			"\n[upgrade/kubelet-config] The kubelet configuration for this node was successfully upgraded!\n",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out.String())
			}
		}
		for _, want := range []string{"Would write", kubelet.InstanceConfigFile, `containerRuntimeEndpoint: "` + socket + `"`, "Would remove --container-runtime-endpoint", "--node-ip=10.0.0.9"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out.String())
			}
		}
		if got := readTestFile(t, filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile)); got != flagsEnv {
			t.Errorf("dry run changed kubeadm-flags.env: %q", got)
		}
		if _, err := os.Stat(filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile)); err == nil {
			t.Error("dry run wrote instance-config.yaml")
		}
		if !annotated(t) || !strings.Contains(out.String(), `Would perform action PATCH on resource "nodes"`) {
			t.Errorf("the dry run removed the annotation, or did not show its removal:\n%s", out.String())
		}
	})

	t.Run("for real, twice", func(t *testing.T) {
		d, _ := setup(t, false)
		run(t, d)
		if got, want := readTestFile(t, filepath.Join(d.KubeletDir, kubelet.InstanceConfigFile)), string(kubelet.InstanceConfig(socket)); got != want {
			t.Errorf("instance-config.yaml = %q, want %q", got, want)
		}
		if got := readTestFile(t, filepath.Join(d.KubeletDir, kubelet.ConfigFile)); !strings.Contains(got, "containerRuntimeEndpoint: "+socket) {
			t.Errorf("config.yaml does not carry the node's socket:\n%s", got)
		}
		if got, want := readTestFile(t, filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile)), `KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.9"`+"\n"; got != want {
			t.Errorf("kubeadm-flags.env = %q, want %q", got, want)
		}
		backups, _ := filepath.Glob(filepath.Join(d.TmpDir(), "kubeadm-kubelet-env*", kubelet.FlagsEnvFile))
		if len(backups) != 1 || readTestFile(t, backups[0]) != flagsEnv {
			t.Errorf("backups of kubeadm-flags.env: %v", backups)
		}

		if annotated(t) {
			t.Error("the Node still has the CRI socket annotation")
		}
		if n, _ := api.CoreV1().Nodes().Get(context.Background(), "old-1", metav1.GetOptions{}); n.Annotations["other"] != "kept" {
			t.Errorf("other annotations: %v", n.Annotations)
		}

		// A second upgrade finds the node migrated.
		sock, instance, err := upgrade.KubeletCRISocket(d.KubeletDir)
		if err != nil || !instance || sock != socket {
			t.Fatalf("after the upgrade: %q %v %v", sock, instance, err)
		}
		d.Node.CRISocket, d.Node.InstanceConfig = sock, instance
		run(t, d)
		backups, _ = filepath.Glob(filepath.Join(d.TmpDir(), "kubeadm-kubelet-env*"))
		if len(backups) != 1 {
			t.Errorf("the second run backed up kubeadm-flags.env again: %v", backups)
		}
		var patches int
		for _, a := range api.Actions() {
			if a.GetVerb() == "patch" {
				patches++
			}
		}
		if patches != 1 {
			t.Errorf("%d patches of the Node over two runs, want 1", patches)
		}
	})

	t.Run("kept while there is no instance-config.yaml", func(t *testing.T) {
		d, _ := setup(t, false)
		if err := dropCRISocketFlag(d); err != nil {
			t.Fatal(err)
		}
		if got := readTestFile(t, filepath.Join(d.KubeletDir, kubelet.FlagsEnvFile)); got != flagsEnv {
			t.Errorf("the flag was removed though nothing else gives the kubelet its socket: %q", got)
		}
	})
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplyClosingLines: "upgrade apply" ends with upstream's lines, which
// scripts grep.
func TestApplyClosingLines(t *testing.T) {
	for _, tc := range []struct {
		dryRun bool
		want   string
	}{
		{false, "\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to \"v1.36.3\".\n\n" +
			"[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.\n"},
		{true, "[upgrade/successful] Finished dryrunning successfully!\n"},
	} {
		var out bytes.Buffer
		d := &Data{Apply: true, DryRun: tc.dryRun, KubeletDir: t.TempDir(), Node: &upgrade.LocalNode{Name: "cp-1"},
			Cfg: &kubeadm.InitConfiguration{}, Out: &out}
		d.Cfg.KubernetesVersion = "v1.36.3"
		if err := postUpgradePhase().Run(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("dry run %v: got %q, want %q", tc.dryRun, out.String(), tc.want)
		}
	}
}

// TestNodeClosingLines: upgrade node's dry run ends with upstream's line,
// as apply's does; for real it ends with a line of its own.
func TestNodeClosingLines(t *testing.T) {
	for _, tc := range []struct {
		dryRun bool
		want   string
	}{
		{false, "[upgrade] The upgrade of this node is done; restart its kubelet after upgrading the kubelet's binary.\n"},
		{true, "[upgrade/successful] Finished dryrunning successfully!\n"},
	} {
		var out bytes.Buffer
		d := &Data{DryRun: tc.dryRun, KubeletDir: t.TempDir(), Node: &upgrade.LocalNode{Name: "w-1"},
			Cfg: &kubeadm.InitConfiguration{}, Out: &out}
		if err := postUpgradePhase().Run(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("dry run %v: got %q, want %q", tc.dryRun, out.String(), tc.want)
		}
	}
}
