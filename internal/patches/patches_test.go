package patches

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The expectations below were taken from upstream kubeadm v1.36.3, run as a
// black box on the same file names and contents.

func TestParseFileName(t *testing.T) {
	const badExt = "the file extension must be one of [json yaml]"
	const badTarget = "unknown target, must be one of [etcd kube-apiserver kube-controller-manager kube-scheduler kubeletconfiguration corednsdeployment kubeproxydaemonset]"
	tests := []struct {
		name       string
		wantTarget string
		wantType   Type
		wantReason string
		wantErr    bool
	}{
		{name: "etcd.yaml", wantTarget: "etcd", wantType: Strategic},
		{name: "etcd.json", wantTarget: "etcd", wantType: Strategic},
		{name: "kube-apiserver0+merge.yaml", wantTarget: "kube-apiserver", wantType: Merge},
		{name: "kube-scheduler+json.json", wantTarget: "kube-scheduler", wantType: JSON},
		{name: "kube-controller-manager-b+strategic.yaml", wantTarget: "kube-controller-manager", wantType: Strategic},
		{name: "kubeletconfiguration.yaml", wantTarget: "kubeletconfiguration", wantType: Strategic},
		{name: "corednsdeployment+merge.json", wantTarget: "corednsdeployment", wantType: Merge},
		// The name part ends at the first dot; the extension is after the last.
		{name: "kube-scheduler.x.yaml", wantTarget: "kube-scheduler", wantType: Strategic},
		{name: "kube-scheduler..yaml", wantTarget: "kube-scheduler", wantType: Strategic},
		{name: "kube-scheduler.+merge.yaml", wantTarget: "kube-scheduler", wantType: Strategic},
		{name: "kube-scheduler+merge.x+json.yaml", wantTarget: "kube-scheduler", wantType: Merge},
		{name: "kube-scheduler+merge+json.yaml", wantTarget: "kube-scheduler", wantType: Merge},
		{name: "kube-schedulerx.json.yaml", wantTarget: "kube-scheduler", wantType: Strategic},
		// Ignored files.
		{name: "kube-scheduler.yml", wantReason: badExt},
		{name: "kube-scheduler.YAML", wantReason: badExt},
		{name: "kube-scheduler.txt", wantReason: badExt},
		{name: "kube-scheduler+bad.txt", wantReason: badExt},
		{name: "kube-scheduler", wantReason: badExt},
		{name: ".yaml", wantReason: badExt},
		{name: "yaml", wantReason: badExt},
		{name: "..yaml", wantReason: badTarget},
		{name: ".kube-scheduler.yaml", wantReason: badTarget},
		{name: "foo.yaml", wantReason: badTarget},
		{name: "foo+bad.yaml", wantReason: badTarget},
		{name: "+merge.yaml", wantReason: badTarget},
		{name: "xkube-scheduler.yaml", wantReason: badTarget},
		{name: "KUBE-SCHEDULER.yaml", wantReason: badTarget},
		// Unknown patch types are errors.
		{name: "kube-scheduler+weird.yaml", wantErr: true},
		{name: "kube-scheduler+MERGE.yaml", wantErr: true},
		{name: "kube-scheduler+.yaml", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, typ, reason, err := ParseFileName(tt.name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if target != tt.wantTarget || typ != tt.wantType || reason != tt.wantReason {
				t.Errorf("got (%q, %q, %q), want (%q, %q, %q)", target, typ, reason, tt.wantTarget, tt.wantType, tt.wantReason)
			}
		})
	}
}

// writeFiles creates the files (path relative to dir -> content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMessagesAndOrder(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"etcd+json.yaml":               "- op: add\n  path: /metadata/labels/patched\n  value: \"true\"\n",
		"foo.yaml":                     "metadata: {labels: {x: y}}\n",
		"kube-apiserver0+merge.yaml":   "metadata:\n  annotations:\n    merged: \"yes\"\n",
		"kube-apiserver1.json":         `{"spec":{"containers":[{"name":"kube-apiserver","resources":{"requests":{"cpu":"500m"}}}]}}`,
		"kube-scheduler.txt":           "x",
		"kube-scheduler.yml":           "x",
		"kubeletconfiguration.yaml":    "maxPods: 10\n",
		"sub/kube-scheduler.yaml":      "metadata: {labels: {sub: \"y\"}}\n",
		"kube-controller-manager.yaml": "",
		"kube-scheduler9.yaml":         "\n  \n",
	})
	var out bytes.Buffer
	set, err := Load(dir, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := `[patches] Reading patches from path "` + dir + `"
[patches] Ignoring file "foo.yaml": unknown target, must be one of [etcd kube-apiserver kube-controller-manager kube-scheduler kubeletconfiguration corednsdeployment kubeproxydaemonset]
[patches] Ignoring empty file: "kube-controller-manager.yaml"
[patches] Ignoring file "kube-scheduler.txt": the file extension must be one of [json yaml]
[patches] Ignoring file "kube-scheduler.yml": the file extension must be one of [json yaml]
[patches] Found the following patch files: [etcd+json.yaml kube-apiserver0+merge.yaml kube-apiserver1.json kube-scheduler9.yaml kubeletconfiguration.yaml kube-scheduler.yaml]
[patches] Ignored the following files: [foo.yaml kube-controller-manager.yaml kube-scheduler.txt kube-scheduler.yml]
`
	if out.String() != want {
		t.Errorf("messages:\n%s\nwant:\n%s", out.String(), want)
	}
	var got []string
	for _, p := range set.Patches {
		got = append(got, filepath.Base(p.File)+":"+p.Target+":"+string(p.Type))
	}
	wantOrder := "etcd+json.yaml:etcd:json kube-apiserver0+merge.yaml:kube-apiserver:merge kube-apiserver1.json:kube-apiserver:strategic kubeletconfiguration.yaml:kubeletconfiguration:strategic kube-scheduler.yaml:kube-scheduler:strategic"
	if strings.Join(got, " ") != wantOrder {
		t.Errorf("patches:\n%s\nwant:\n%s", strings.Join(got, " "), wantOrder)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the folder to load
	}{
		{"missing folder", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") }},
		{"file instead of folder", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "f")
			writeFiles(t, dir, map[string]string{"f": "x"})
			return p
		}},
		{"symbolic link to a folder", func(t *testing.T, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "link")
			if err := os.Symlink(filepath.Join(dir, "real"), p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"unknown patch type", func(t *testing.T, dir string) string {
			writeFiles(t, dir, map[string]string{"kube-scheduler+weird.yaml": "a: b"})
			return dir
		}},
		{"invalid YAML", func(t *testing.T, dir string) string {
			writeFiles(t, dir, map[string]string{"kube-scheduler.yaml": "[not valid\n"})
			return dir
		}},
		{"dangling link", func(t *testing.T, dir string) string {
			if err := os.Symlink("/nonexistent", filepath.Join(dir, "etcd.yaml")); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t, t.TempDir())
			var out bytes.Buffer
			if _, err := Load(dir, &out); err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(out.String(), "[patches] Reading patches from path") {
				t.Errorf("output %q", out.String())
			}
		})
	}
}

func TestDocuments(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a: 1\n", []string{`{"a":1}`}},
		{"\n  \n", nil},
		{"# comment\n", []string{"null"}},
		{"---\n", []string{"null"}},
		{"---\na: 1\n---\n\n---\nb: 2\n", []string{`{"a":1}`, `{"b":2}`}},
		{"{\"a\": 1}\n{\"b\": 2}", []string{`{"a":1}`}},
		{"- op: remove\n  path: /x\n", []string{`[{"op":"remove","path":"/x"}]`}},
	}
	for _, tt := range tests {
		docs, err := documents([]byte(tt.in))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		var got []string
		for _, d := range docs {
			got = append(got, string(d))
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"kube-scheduler","labels":{"component":"kube-scheduler"}},"spec":{"containers":[{"name":"kube-scheduler","image":"img","command":["kube-scheduler","--v=2"]}],"volumes":[{"name":"kubeconfig","hostPath":{"path":"/etc/kubernetes/scheduler.conf"}},{"name":"other","hostPath":{"path":"/x"}}]}}`

func TestApplyTypes(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantMsg string
		wantErr bool
	}{
		{
			name:    "strategic merges containers by name",
			files:   map[string]string{"kube-scheduler.yaml": "spec:\n  containers:\n  - name: kube-scheduler\n    image: patched\n"},
			want:    `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"component":"kube-scheduler"},"name":"kube-scheduler"},"spec":{"containers":[{"command":["kube-scheduler","--v=2"],"image":"patched","name":"kube-scheduler"}],"volumes":[{"hostPath":{"path":"/etc/kubernetes/scheduler.conf"},"name":"kubeconfig"},{"hostPath":{"path":"/x"},"name":"other"}]}}`,
			wantMsg: `[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-scheduler"` + "\n",
		},
		{
			name:    "strategic $patch delete",
			files:   map[string]string{"kube-scheduler.json": `{"spec":{"volumes":[{"name":"other","$patch":"delete"}]}}`},
			want:    `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"component":"kube-scheduler"},"name":"kube-scheduler"},"spec":{"containers":[{"command":["kube-scheduler","--v=2"],"image":"img","name":"kube-scheduler"}],"volumes":[{"hostPath":{"path":"/etc/kubernetes/scheduler.conf"},"name":"kubeconfig"}]}}`,
			wantMsg: `[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-scheduler"` + "\n",
		},
		{
			name:    "merge replaces lists",
			files:   map[string]string{"kube-scheduler+merge.yaml": "spec:\n  containers:\n  - name: only\n"},
			want:    `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"component":"kube-scheduler"},"name":"kube-scheduler"},"spec":{"containers":[{"name":"only"}],"volumes":[{"hostPath":{"path":"/etc/kubernetes/scheduler.conf"},"name":"kubeconfig"},{"hostPath":{"path":"/x"},"name":"other"}]}}`,
			wantMsg: `[patches] Applied patch of type "application/merge-patch+json" to target "kube-scheduler"` + "\n",
		},
		{
			name:    "json patch",
			files:   map[string]string{"kube-scheduler+json.yaml": "- op: add\n  path: /spec/containers/0/command/-\n  value: --v=4\n- op: remove\n  path: /spec/volumes/1\n"},
			want:    `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"component":"kube-scheduler"},"name":"kube-scheduler"},"spec":{"containers":[{"command":["kube-scheduler","--v=2","--v=4"],"image":"img","name":"kube-scheduler"}],"volumes":[{"hostPath":{"path":"/etc/kubernetes/scheduler.conf"},"name":"kubeconfig"}]}}`,
			wantMsg: `[patches] Applied patch of type "application/json-patch+json" to target "kube-scheduler"` + "\n",
		},
		{
			name: "in lexical order of paths, sub-folders included",
			files: map[string]string{
				"a/kube-scheduler9.yaml":    "metadata: {annotations: {order: nine}}",
				"kube-scheduler0.yaml":      "metadata: {annotations: {order: zero}}",
				"kube-scheduler+merge.yaml": "metadata: {annotations: {merge: m}}",
				"etcd.yaml":                 "metadata: {annotations: {other: target}}",
			},
			want:    `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"merge":"m","order":"zero"},"labels":{"component":"kube-scheduler"},"name":"kube-scheduler"},"spec":{"containers":[{"command":["kube-scheduler","--v=2"],"image":"img","name":"kube-scheduler"}],"volumes":[{"hostPath":{"path":"/etc/kubernetes/scheduler.conf"},"name":"kubeconfig"},{"hostPath":{"path":"/x"},"name":"other"}]}}`,
			wantMsg: strings.Repeat(`[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-scheduler"`+"\n", 1) + `[patches] Applied patch of type "application/merge-patch+json" to target "kube-scheduler"` + "\n" + `[patches] Applied patch of type "application/strategic-merge-patch+json" to target "kube-scheduler"` + "\n",
		},
		{
			name:    "json patch failing",
			files:   map[string]string{"kube-scheduler+json.json": `[{"op":"remove","path":"/nonexistent"}]`},
			wantErr: true,
		},
		{
			name:    "json patch that is not a list",
			files:   map[string]string{"kube-scheduler+json.json": `foo: bar`},
			wantErr: true,
		},
		{
			name:    "merge patch null",
			files:   map[string]string{"kube-scheduler+merge.yaml": `null`},
			wantErr: true,
		},
		{
			name:    "strategic patch not an object",
			files:   map[string]string{"kube-scheduler.yaml": `"str"`},
			wantErr: true,
		},
		{
			name:  "no patch for the target",
			files: map[string]string{"etcd.yaml": "a: b"},
			want:  podJSON,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			set, err := Load(dir, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			got, err := set.Apply(TargetKubeScheduler, []byte(podJSON), &out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !jsonEqual(t, got, []byte(tt.want)) {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if out.String() != tt.wantMsg {
				t.Errorf("messages %q, want %q", out.String(), tt.wantMsg)
			}
		})
	}
}

func TestApplyKeepsTheFormat(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"kubeletconfiguration+merge.yaml": "maxPods: 10\n"})
	doc := []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 110\n")
	var out bytes.Buffer
	got, err := Apply(dir, TargetKubeletConfiguration, doc, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 10\n"; string(got) != want {
		t.Errorf("YAML in: got %q, want %q", got, want)
	}
	got, err = Apply(dir, TargetKubeletConfiguration, []byte(`{"maxPods":110}`), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"maxPods":10}`; !jsonEqual(t, got, []byte(want)) {
		t.Errorf("JSON in: got %q, want %q", got, want)
	}
	// Strategic patches of the kubelet configuration replace lists.
	writeFiles(t, dir, map[string]string{"kubeletconfiguration.yaml": "clusterDNS: [10.0.0.10]\n"})
	got, err = Apply(dir, TargetKubeletConfiguration, []byte(`{"clusterDNS":["1.1.1.1","2.2.2.2"]}`), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"clusterDNS":["10.0.0.10"],"maxPods":10}`; !jsonEqual(t, got, []byte(want)) {
		t.Errorf("strategic: got %q, want %q", got, want)
	}
}

func TestApplyWithoutFolder(t *testing.T) {
	var out bytes.Buffer
	doc := []byte("a: b\n")
	got, err := Apply("", TargetEtcd, doc, &out)
	if err != nil || !bytes.Equal(got, doc) || out.Len() != 0 {
		t.Errorf("got %q, %v, output %q", got, err, out.String())
	}
}

func TestKnownIsACopy(t *testing.T) {
	k := Known()
	k[0] = "changed"
	if Known()[0] != TargetEtcd {
		t.Error("Known returns shared state")
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// TestApplyTo: a typed object is patched through its JSON form; fields its
// type lacks are dropped, and a patch may not change what the document is.
func TestApplyTo(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"corednsdeployment+merge.yaml": "spec:\n  replicas: 4\n  notAField: 1\n",
	})
	set, err := Load(dir, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, Spec: appsv1.DeploymentSpec{Replicas: &two}}
	var out bytes.Buffer
	got, err := ApplyTo(set, TargetCoreDNSDeployment, d, &out)
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 4 || *d.Spec.Replicas != 2 {
		t.Errorf("replicas: patched %d, original %d; want 4 and 2", *got.Spec.Replicas, *d.Spec.Replicas)
	}
	if want := "[patches] Applied patch of type \"application/merge-patch+json\" to target \"corednsdeployment\"\n"; out.String() != want {
		t.Errorf("messages %q, want %q", out.String(), want)
	}
	if same, err := ApplyTo(set, TargetEtcd, d, &out); err != nil || same != d {
		t.Errorf("without patches for the target: %p, %v; want the object itself", same, err)
	}

	writeFiles(t, dir, map[string]string{"corednsdeployment+merge.yaml": "kind: DaemonSet\n"})
	if set, err = Load(dir, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyTo(set, TargetCoreDNSDeployment, d, &out); err == nil || !strings.Contains(err.Error(), `is a "DaemonSet" of apiVersion "apps/v1", no longer a "Deployment"`) {
		t.Errorf("a patch changing the kind: %v", err)
	}
}
