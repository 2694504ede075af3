package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// The init phases that talk to the API server (upload-config,
// upload-certs, mark-control-plane, kubelet-finalize, show-join-command),
// run with our kubeadm and with upstream kubeadm v1.37.2 against the same
// real API server, compared apiObject by apiObject (as parsed, without the
// fields the server assigns).

// Configuration files written into the node's root folder besides the
// harness's /kubeadm.yaml.
var apiConfigs = map[string]string{
	// Much of the ClusterConfiguration set, a KubeletConfiguration given by
	// the user, custom taints and a fixed certificate key.
	"/custom.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
  taints:
  - key: example.com/foo
    value: bar
    effect: NoExecute
  - key: example.com/bare
    effect: PreferNoSchedule
certificateKey: 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: cp.example.test:6443
clusterName: mycluster
apiServer:
  certSANs: [a.example]
  extraArgs:
  - name: v
    value: "2"
networking:
  podSubnet: 10.244.0.0/16
featureGates:
  RootlessControlPlane: false
etcd:
  local:
    extraArgs:
    - name: log-level
      value: debug
dns:
  disabled: true
proxy:
  disabled: true
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 50
cgroupDriver: cgroupfs
`,
	// An external etcd reached with the local etcd's files.
	"/external-etcd.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
etcd:
  external:
    endpoints: ["https://10.199.0.2:2379"]
    caFile: /etc/kubernetes/pki/etcd/ca.crt
    certFile: /etc/kubernetes/pki/apiserver-etcd-client.crt
    keyFile: /etc/kubernetes/pki/apiserver-etcd-client.key
`,
	// A fixed token and a control-plane endpoint: join commands that both
	// implementations print alike.
	"/join.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: abcdef.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
certificateKey: 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
controlPlaneEndpoint: cp.example.test
`,
	// The same without a control-plane endpoint.
	"/join-worker.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: bcdefg.0123456789abcdef
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
`,
	// The taints of /custom.yaml with a short API timeout, for a case
	// where upstream retries until it gives up.
	"/taints-short-timeout.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
  taints:
  - key: example.com/foo
    value: bar
    effect: NoExecute
  - key: example.com/bare
    effect: PreferNoSchedule
timeouts:
  kubernetesAPICall: 3s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
`,
	// A short API timeout, for waits that must give up.
	"/short-timeout.yaml": `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.199.0.2
nodeRegistration:
  name: fast-tier-cp
timeouts:
  kubernetesAPICall: 2s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.37.2
`,
}

// apiCertKey is the certificate key of /custom.yaml and /join.yaml.
const apiCertKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// apiTester runs both kubeadm binaries against one control plane.
type apiTester struct {
	cp       *controlplane.ControlPlane
	upstream string
	cs       kubernetes.Interface
}

func TestInitAPIPhases(t *testing.T) {
	upstream := apiUpstreamKubeadm(t)
	cp := controlplane.Start(t, controlplane.Options{})
	for path, content := range apiConfigs {
		if err := os.WriteFile(cp.HostPath(path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	at := &apiTester{cp: cp, upstream: upstream, cs: cp.Client()}
	t.Run("upload-config", at.testUploadConfig)
	t.Run("upload-certs", at.testUploadCerts)
	t.Run("mark-control-plane", at.testMarkControlPlane)
	t.Run("kubelet-finalize", at.testKubeletFinalize)
	t.Run("show-join-command", at.testShowJoinCommand)
}

// apiUpstreamKubeadm is upstream's kubeadm binary (make upstream).
func apiUpstreamKubeadm(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", ".cache", "upstream", controlplane.KubernetesVersion, "kubeadm"))
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		if os.Getenv(controlplane.IntegrationEnv) == "1" {
			t.Fatalf("upstream kubeadm (make upstream): %v", err)
		}
		t.Skipf("upstream kubeadm is missing (make upstream): %v", err)
	}
	return path
}

// ours runs our kubeadm with args in the node's root and returns its
// output; failing is fatal.
func (at *apiTester) ours(t *testing.T, args ...string) string {
	t.Helper()
	return apiRun(t, at.cp.KubeadmCommand(args...), "ours")
}

// theirs runs upstream kubeadm the same way.
func (at *apiTester) theirs(t *testing.T, args ...string) string {
	t.Helper()
	return apiRun(t, at.cp.Command(at.upstream, append(args, "--rootfs", at.cp.Root())...), "upstream")
}

func apiRun(t *testing.T, cmd *exec.Cmd, who string) string {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s kubeadm %s: %v\n%s", who, strings.Join(cmd.Args[3:], " "), err, out)
	}
	return string(out)
}

// apiObject identifies an object to compare.
type apiObject struct{ kind, namespace, name string }

// snapshot reads objects and returns each as parsed JSON, without the
// fields the server assigns (uid, resourceVersion, creationTimestamp,
// managedFields) and, for owner references, without the owner's name and
// uid (a random token).
func (at *apiTester) snapshot(t *testing.T, objs ...apiObject) map[apiObject]any {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	out := map[apiObject]any{}
	for _, o := range objs {
		var got any
		var err error
		switch o.kind {
		case "ConfigMap":
			got, err = at.cs.CoreV1().ConfigMaps(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		case "Secret":
			got, err = at.cs.CoreV1().Secrets(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		case "Role":
			got, err = at.cs.RbacV1().Roles(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		case "RoleBinding":
			got, err = at.cs.RbacV1().RoleBindings(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		default:
			t.Fatalf("snapshot: kind %s", o.kind)
		}
		if err != nil {
			t.Fatalf("reading %s %s/%s: %v", o.kind, o.namespace, o.name, err)
		}
		out[o] = apiNormalize(t, got)
	}
	return out
}

func apiNormalize(t *testing.T, obj any) any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	meta, _ := m["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		delete(meta, k)
	}
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		delete(r.(map[string]any), "uid")
		delete(r.(map[string]any), "name")
	}
	return m
}

func apiCompare(t *testing.T, what string, ours, theirs map[apiObject]any) {
	t.Helper()
	for o, want := range theirs {
		if got := ours[o]; !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", "  ")
			w, _ := json.MarshalIndent(want, "", "  ")
			t.Errorf("%s: %s %s/%s differs:\nours:\n%s\nupstream:\n%s", what, o.kind, o.namespace, o.name, g, w)
		}
	}
}

var apiUploadConfigObjects = []apiObject{
	{"ConfigMap", "kube-system", "kubeadm-config"},
	{"ConfigMap", "kube-system", "kubelet-config"},
	{"Role", "kube-system", "kubeadm:nodes-kubeadm-config"},
	{"RoleBinding", "kube-system", "kubeadm:nodes-kubeadm-config"},
	{"Role", "kube-system", "kubeadm:kubelet-config"},
	{"RoleBinding", "kube-system", "kubeadm:kubelet-config"},
}

func (at *apiTester) testUploadConfig(t *testing.T) {
	for _, config := range []string{"/kubeadm.yaml", "/custom.yaml"} {
		t.Run(config, func(t *testing.T) {
			out := at.ours(t, "init", "phase", "upload-config", "all", "--config", config)
			for _, want := range []string{`[upload-config] Storing the cluster configuration in ConfigMap "kubeadm-config"`, `[kubelet] Storing the configuration all kubelets share in ConfigMap "kubelet-config"`} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			first := at.snapshot(t, apiUploadConfigObjects...)
			versions := at.resourceVersions(t, apiUploadConfigObjects...)

			// Again: nothing changes, not even a resourceVersion.
			at.ours(t, "init", "phase", "upload-config", "kubeadm", "--config", config)
			at.ours(t, "init", "phase", "upload-config", "kubelet", "--config", config)
			apiCompare(t, "second run", at.snapshot(t, apiUploadConfigObjects...), first)
			if again := at.resourceVersions(t, apiUploadConfigObjects...); !reflect.DeepEqual(again, versions) {
				t.Errorf("a second run rewrote objects: resourceVersions %v, then %v", versions, again)
			}

			at.theirs(t, "init", "phase", "upload-config", "all", "--config", config)
			apiCompare(t, "ours vs upstream", first, at.snapshot(t, apiUploadConfigObjects...))
		})
	}
	// The default configuration's kubelet-config carries the checksum
	// annotation; the user-supplied one does not, after the switch either.
	cm, err := at.cs.CoreV1().ConfigMaps("kube-system").Get(testContext(t, 10*time.Second), "kubelet-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Annotations) != 0 {
		t.Errorf("kubelet-config of a user-supplied configuration has annotations %v", cm.Annotations)
	}
}

func (at *apiTester) resourceVersions(t *testing.T, objs ...apiObject) []string {
	t.Helper()
	var rvs []string
	for _, o := range objs {
		m := at.snapshotRaw(t, o)
		rvs = append(rvs, m.GetResourceVersion())
	}
	return rvs
}

func (at *apiTester) snapshotRaw(t *testing.T, o apiObject) metav1.Object {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	var got metav1.Object
	var err error
	switch o.kind {
	case "ConfigMap":
		got, err = at.cs.CoreV1().ConfigMaps(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	case "Secret":
		got, err = at.cs.CoreV1().Secrets(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	case "Role":
		got, err = at.cs.RbacV1().Roles(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	case "RoleBinding":
		got, err = at.cs.RbacV1().RoleBindings(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("reading %s %s/%s: %v", o.kind, o.namespace, o.name, err)
	}
	return got
}

var apiCertsObjects = []apiObject{
	{"Secret", "kube-system", "kubeadm-certs"},
	{"Role", "kube-system", "kubeadm:kubeadm-certs"},
	{"RoleBinding", "kube-system", "kubeadm:kubeadm-certs"},
}

// apiPrintedKey is the certificate key after "Using certificate key:".
func apiPrintedKey(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`\[upload-certs\] Using certificate key:\n([0-9a-f]{64})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no certificate key in the output:\n%s", out)
	}
	return m[1]
}

func (at *apiTester) testUploadCerts(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	pki := at.cp.HostPath("/etc/kubernetes/pki")
	local := copycerts.Files(pki, kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})

	// Upstream's Secret opens with our code and the key upstream printed.
	theirKey := apiPrintedKey(t, at.theirs(t, "init", "phase", "upload-certs", "--upload-certs", "--config", "/kubeadm.yaml"))
	theirs := at.snapshot(t, apiCertsObjects[1:]...)
	theirSecret, theirOwner := at.certsSecret(t)
	at.checkSecretContent(t, "upstream's Secret", theirSecret, theirKey, local)
	at.checkDownload(ctx, t, theirKey)

	// Ours: same shape, opens with the key it printed.
	began := time.Now()
	out := at.ours(t, "init", "phase", "upload-certs", "--upload-certs", "--config", "/kubeadm.yaml")
	ourKey := apiPrintedKey(t, out)
	if ourKey == theirKey {
		t.Error("both runs printed the same key; each should make a new one")
	}
	if !strings.Contains(out, `[upload-certs] Storing the encrypted control-plane certificates in Secret "kubeadm-certs" in namespace "kube-system"`) {
		t.Errorf("output:\n%s", out)
	}
	ours := at.snapshot(t, apiCertsObjects[1:]...)
	ourSecret, ourOwner := at.certsSecret(t)
	at.checkSecretContent(t, "our Secret", ourSecret, ourKey, local)
	at.checkDownload(ctx, t, ourKey)
	apiCompare(t, "RBAC", ours, theirs)
	if got, want := apiSortedKeys(ourSecret.Data), apiSortedKeys(theirSecret.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("Secret keys %v, upstream's %v", got, want)
	}
	shape := func(s *corev1.Secret) any {
		ref := s.OwnerReferences[0]
		ref.Name, ref.UID = "", ""
		return []any{s.Type, ref, len(s.OwnerReferences)}
	}
	if !reflect.DeepEqual(shape(ourSecret), shape(theirSecret)) {
		t.Errorf("Secret type and owner %v, upstream's %v", shape(ourSecret), shape(theirSecret))
	}
	if ourOwner.Name == theirOwner.Name {
		t.Error("our upload reused upstream's owner token")
	}
	ownerShape := func(s *corev1.Secret) any {
		return []any{s.Type, apiSortedKeys(s.Data), string(s.Data["description"]), len(s.Data["token-secret"]),
			s.Name == "bootstrap-token-"+string(s.Data["token-id"])}
	}
	if !reflect.DeepEqual(ownerShape(ourOwner), ownerShape(theirOwner)) {
		t.Errorf("owner token %v, upstream's %v", ownerShape(ourOwner), ownerShape(theirOwner))
	}
	exp, err := time.Parse(time.RFC3339, string(ourOwner.Data["expiration"]))
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.Sub(began); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Errorf("owner token expires %v after the upload, want 2h", d)
	}

	// Again with a key from the configuration: the Secret converges to the
	// same files under the new key, owned by a new token.
	out = at.ours(t, "init", "phase", "upload-certs", "--upload-certs", "--config", "/custom.yaml")
	if apiPrintedKey(t, out) != apiCertKey {
		t.Errorf("printed key is not the configuration's:\n%s", out)
	}
	again, owner := at.certsSecret(t)
	at.checkSecretContent(t, "re-uploaded Secret", again, apiCertKey, local)
	if owner.Name == ourOwner.Name {
		t.Error("a second upload kept the old owner token")
	}
	if _, err := copycerts.Open(again, ourKey); !errors.Is(err, copycerts.ErrDecrypt) {
		t.Errorf("the re-uploaded Secret opens with the old key: %v", err)
	}

	// --skip-certificate-key-print.
	out = at.ours(t, "init", "phase", "upload-certs", "--upload-certs", "--skip-certificate-key-print", "--config", "/custom.yaml")
	if strings.Contains(out, apiCertKey) || strings.Contains(out, "Using certificate key") {
		t.Errorf("the key was printed:\n%s", out)
	}

	// Without --upload-certs nothing is written.
	before := at.snapshotRaw(t, apiCertsObjects[0]).GetResourceVersion()
	out = at.ours(t, "init", "phase", "upload-certs", "--config", "/kubeadm.yaml")
	if !strings.Contains(out, "[upload-certs] Skipping phase") {
		t.Errorf("output without --upload-certs:\n%s", out)
	}
	if after := at.snapshotRaw(t, apiCertsObjects[0]).GetResourceVersion(); after != before {
		t.Error("the Secret changed without --upload-certs")
	}

	// External etcd: its client files travel instead of the etcd CA.
	theirKey = apiPrintedKey(t, at.theirs(t, "init", "phase", "upload-certs", "--upload-certs", "--config", "/external-etcd.yaml"))
	theirSecret, _ = at.certsSecret(t)
	ourKey = apiPrintedKey(t, at.ours(t, "init", "phase", "upload-certs", "--upload-certs", "--config", "/external-etcd.yaml"))
	ourSecret, _ = at.certsSecret(t)
	if got, want := apiSortedKeys(ourSecret.Data), apiSortedKeys(theirSecret.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("external etcd: Secret keys %v, upstream's %v", got, want)
	}
	external := copycerts.Files(pki, kubeadm.Etcd{External: &kubeadm.ExternalEtcd{
		CAFile:   at.cp.HostPath("/etc/kubernetes/pki/etcd/ca.crt"),
		CertFile: at.cp.HostPath("/etc/kubernetes/pki/apiserver-etcd-client.crt"),
		KeyFile:  at.cp.HostPath("/etc/kubernetes/pki/apiserver-etcd-client.key"),
	}})
	at.checkSecretContent(t, "external etcd, upstream", theirSecret, theirKey, external)
	at.checkSecretContent(t, "external etcd, ours", ourSecret, ourKey, external)
}

// certsSecret returns the kubeadm-certs Secret and its owner.
func (at *apiTester) certsSecret(t *testing.T) (*corev1.Secret, *corev1.Secret) {
	t.Helper()
	ctx := testContext(t, 10*time.Second)
	s, err := at.cs.CoreV1().Secrets("kube-system").Get(ctx, copycerts.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.OwnerReferences) != 1 {
		t.Fatalf("kubeadm-certs has owners %+v, want one", s.OwnerReferences)
	}
	owner, err := at.cs.CoreV1().Secrets("kube-system").Get(ctx, s.OwnerReferences[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("owner of kubeadm-certs: %v", err)
	}
	if owner.UID != s.OwnerReferences[0].UID {
		t.Errorf("owner reference uid %s, the token's is %s", s.OwnerReferences[0].UID, owner.UID)
	}
	return s, owner
}

// checkSecretContent decrypts every entry and compares it with the file.
func (at *apiTester) checkSecretContent(t *testing.T, what string, s *corev1.Secret, key string, files []copycerts.File) {
	t.Helper()
	plain, err := copycerts.Open(s, key)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(plain) != len(files) {
		t.Errorf("%s: %d entries, want %d", what, len(plain), len(files))
	}
	for _, f := range files {
		want, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain[f.Key], want) {
			t.Errorf("%s: entry %s does not decrypt to %s", what, f.Key, f.Path)
		}
	}
}

// checkDownload fetches the Secret with our code: a wrong key writes
// nothing, the right one writes every file as it is on the node.
func (at *apiTester) checkDownload(ctx context.Context, t *testing.T, key string) {
	t.Helper()
	admin, err := at.cp.ClientFor(at.cp.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	target := copycerts.Files(filepath.Join(dir, "pki"), kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})
	wrong := strings.Repeat("ab", 32)
	trustedCA, err := os.ReadFile(at.cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := copycerts.Download(ctx, admin, copycerts.DownloadOptions{Files: target, Key: wrong, TrustedCA: trustedCA}); !errors.Is(err, copycerts.ErrDecrypt) || strings.Contains(err.Error(), wrong) {
		t.Errorf("download with a wrong key: %v, want ErrDecrypt without the key", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed download wrote %d entries", len(entries))
	}
	if err := copycerts.Download(ctx, admin, copycerts.DownloadOptions{Files: target, Key: key, TrustedCA: trustedCA}); err != nil {
		t.Fatalf("download: %v", err)
	}
	node := copycerts.Files(at.cp.HostPath("/etc/kubernetes/pki"), kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})
	for i, f := range target {
		got, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(node[i].Path)
		if !bytes.Equal(got, want) {
			t.Errorf("downloaded %s differs from the node's %s", f.Path, node[i].Path)
		}
	}
}

func apiSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nodeMarks are a Node's labels and taints, less what the kubelet or
// kube-controller-manager set (the hostname label, node.kubernetes.io/
// condition taints).
func (at *apiTester) nodeMarks(t *testing.T, name string) (map[string]string, []string) {
	t.Helper()
	n, err := at.cs.CoreV1().Nodes().Get(testContext(t, 10*time.Second), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for k, v := range n.Labels {
		if k != "kubernetes.io/hostname" {
			labels[k] = v
		}
	}
	var taints []string
	for _, tn := range n.Spec.Taints {
		if !strings.HasPrefix(tn.Key, "node.kubernetes.io/") {
			taints = append(taints, tn.ToString())
		}
	}
	return labels, taints
}

func (at *apiTester) createNode(t *testing.T, name string, registered bool, taints ...corev1.Taint) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	if registered {
		n.Labels = map[string]string{"kubernetes.io/hostname": name}
	}
	_, err := at.cs.CoreV1().Nodes().Create(testContext(t, 10*time.Second), n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func (at *apiTester) testMarkControlPlane(t *testing.T) {
	keep := corev1.Taint{Key: "example.com/keep", Effect: corev1.TaintEffectNoSchedule}
	bare := corev1.Taint{Key: "example.com/bare", Effect: corev1.TaintEffectPreferNoSchedule}
	wantLabels := map[string]string{
		"node-role.kubernetes.io/control-plane":                   "",
		"node.kubernetes.io/exclude-from-external-load-balancers": "",
	}
	tests := []struct {
		name       string
		config     string
		ourNode    string
		has        []corev1.Taint // the Node's taints before
		wantTaints []string
		// upstreamFails: upstream sends both taints of one key and effect,
		// which the API server refuses; ours replaces the value.
		upstreamFails bool
	}{
		{"default taint", "/kubeadm.yaml", controlplane.DefaultNodeName, []corev1.Taint{keep},
			[]string{"node-role.kubernetes.io/control-plane:NoSchedule", "example.com/keep:NoSchedule"}, false},
		{"custom taints", "/custom.yaml", "ours-custom", []corev1.Taint{keep},
			[]string{"example.com/foo=bar:NoExecute", "example.com/bare:PreferNoSchedule", "example.com/keep:NoSchedule"}, false},
		{"one taint already there", "/custom.yaml", "ours-mixed", []corev1.Taint{keep, bare},
			[]string{"example.com/foo=bar:NoExecute", "example.com/bare:PreferNoSchedule", "example.com/keep:NoSchedule"}, false},
		{"one taint there with another value", "/taints-short-timeout.yaml", "ours-value", []corev1.Taint{keep, {Key: "example.com/bare", Value: "old", Effect: corev1.TaintEffectPreferNoSchedule}},
			[]string{"example.com/foo=bar:NoExecute", "example.com/bare:PreferNoSchedule", "example.com/keep:NoSchedule"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			theirNode := "upstream-" + strings.ReplaceAll(tt.name, " ", "-")
			at.createNode(t, tt.ourNode, true, tt.has...)
			at.createNode(t, theirNode, true, tt.has...)
			args := []string{"init", "phase", "mark-control-plane", "--config", tt.config}
			out := at.ours(t, append(args, "--node-name", tt.ourNode)...)
			if !strings.Contains(out, "[mark-control-plane] Marking node "+tt.ourNode) {
				t.Errorf("output:\n%s", out)
			}
			labels, taints := at.nodeMarks(t, tt.ourNode)
			at.ours(t, append(args, "--node-name", tt.ourNode)...)
			if l, tn := at.nodeMarks(t, tt.ourNode); !reflect.DeepEqual(l, labels) || !reflect.DeepEqual(tn, taints) {
				t.Errorf("a second run changed the node: %v %v, then %v %v", labels, taints, l, tn)
			}
			if tt.upstreamFails {
				cmd := at.cp.Command(at.upstream, append(args, "--node-name", theirNode, "--rootfs", at.cp.Root())...)
				if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "taints must be unique by key and effect pair") {
					t.Errorf("upstream no longer fails here (update this test): %v\n%s", err, out)
				}
			} else {
				at.theirs(t, append(args, "--node-name", theirNode)...)
				theirLabels, theirTaints := at.nodeMarks(t, theirNode)
				if !reflect.DeepEqual(labels, theirLabels) || !reflect.DeepEqual(taints, theirTaints) {
					t.Errorf("our node: labels %v, taints %v; upstream's: %v, %v", labels, taints, theirLabels, theirTaints)
				}
			}
			if !reflect.DeepEqual(labels, wantLabels) || !reflect.DeepEqual(taints, tt.wantTaints) {
				t.Errorf("our node: labels %v, taints %v; want %v, %v", labels, taints, wantLabels, tt.wantTaints)
			}
		})
	}

	// A Node its kubelet has not registered (no hostname label) is not
	// touched, and the wait ends in an error. Upstream gives up silently
	// here, leaving the node unmarked; ours says so.
	t.Run("unregistered node", func(t *testing.T) {
		at.createNode(t, "unregistered", false)
		cmd := at.cp.KubeadmCommand("init", "phase", "mark-control-plane", "--config", "/short-timeout.yaml", "--node-name", "unregistered")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "has no kubernetes.io/hostname label") {
			t.Errorf("err %v, output:\n%s", err, out)
		}
		if labels, _ := at.nodeMarks(t, "unregistered"); len(labels) != 0 {
			t.Errorf("unregistered node got labels %v", labels)
		}
	})
}

func (at *apiTester) testKubeletFinalize(t *testing.T) {
	conf := at.cp.HostPath("/etc/kubernetes/kubelet.conf")
	pem := at.cp.HostPath("/var/lib/kubelet/pki/kubelet-client-current.pem")
	original, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(pem)
		os.WriteFile(conf, original, 0o600)
	})
	args := []string{"init", "phase", "kubelet-finalize", "all", "--config", "/kubeadm.yaml"}

	// Before the kubelet's TLS bootstrap: nothing to do, for both.
	for _, run := range []func(*testing.T, ...string) string{at.ours, at.theirs} {
		run(t, args...)
		if b, _ := os.ReadFile(conf); !bytes.Equal(b, original) {
			t.Fatal("kubelet.conf changed without the kubelet's certificate")
		}
	}

	if err := os.MkdirAll(filepath.Dir(pem), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pem, original, 0o600); err != nil { // any content: only its presence counts
		t.Fatal(err)
	}
	at.theirs(t, args...)
	theirs, err := clientcmd.LoadFromFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, original, 0o600); err != nil {
		t.Fatal(err)
	}
	out := at.ours(t, args...)
	if !strings.Contains(out, `[kubelet-finalize] Pointing "/etc/kubernetes/kubelet.conf" at the client certificate and key the kubelet renews`) {
		t.Errorf("output:\n%s", out)
	}
	ours, err := clientcmd.LoadFromFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(apiKubeconfigJSON(t, ours), apiKubeconfigJSON(t, theirs)) {
		t.Errorf("kubelet.conf:\nours:\n%s\nupstream's:\n%s", apiKubeconfigJSON(t, ours), apiKubeconfigJSON(t, theirs))
	}
	if user := ours.AuthInfos[ours.Contexts[ours.CurrentContext].AuthInfo]; user.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" {
		t.Errorf("user %+v", user)
	}
	if fi, _ := os.Stat(conf); fi.Mode().Perm() != 0o600 {
		t.Errorf("kubelet.conf mode %v", fi.Mode().Perm())
	}

	// Again: unchanged.
	before, _ := os.ReadFile(conf)
	at.ours(t, args...)
	if after, _ := os.ReadFile(conf); !bytes.Equal(before, after) {
		t.Error("a second run changed kubelet.conf")
	}
}

// apiKubeconfigJSON is a kubeconfig as JSON, without the fields that only
// record where it was loaded from.
func apiKubeconfigJSON(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`"LocationOfOrigin":"[^"]*",?`).ReplaceAllString(string(b), "")
}

// apiJoinCommands returns the "kubeadm join" commands of an output, each on
// one line with single spaces.
func apiJoinCommands(out string) []string {
	var cmds []string
	var cur []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if cur == nil && !strings.HasPrefix(line, "kubeadm join ") {
			continue
		}
		cont := strings.HasSuffix(line, "\\")
		cur = append(cur, strings.Fields(strings.TrimSuffix(line, "\\"))...)
		if !cont {
			cmds = append(cmds, strings.Join(cur, " "))
			cur = nil
		}
	}
	return cmds
}

func (at *apiTester) testShowJoinCommand(t *testing.T) {
	at.createNode(t, controlplane.DefaultNodeName, true)
	// Everything but the API phases; ours also skips the bootstrap-token
	// and addon phases (the tokens are not what is compared here), which
	// upstream cannot skip.
	const offline = "preflight,certs,kubeconfig,etcd,control-plane,kubelet-start,wait-control-plane,addon"
	tests := []struct {
		name  string
		args  []string
		wantN int // join commands expected
	}{
		{"control plane and worker", []string{"--config", "/join.yaml", "--upload-certs"}, 2},
		{"certificates not uploaded", []string{"--config", "/join.yaml"}, 2},
		{"secrets withheld", []string{"--config", "/join.yaml", "--upload-certs", "--skip-token-print", "--skip-certificate-key-print"}, 2},
		{"worker only", []string{"--config", "/join-worker.yaml", "--upload-certs"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			theirs := at.theirs(t, append([]string{"init", "--skip-phases", offline}, tt.args...)...)
			ours := at.ours(t, append([]string{"init", "--skip-phases", offline + ",bootstrap-token"}, tt.args...)...)
			got, want := apiJoinCommands(ours), apiJoinCommands(theirs)
			if len(want) != tt.wantN || !reflect.DeepEqual(got, want) {
				t.Errorf("join commands:\nours:\n%s\nupstream's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, fact := range []string{"mkdir -p $HOME/.kube", "sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config",
				"export KUBECONFIG=/etc/kubernetes/admin.conf", "https://kubernetes.io/docs/concepts/cluster-administration/addons/"} {
				if !strings.Contains(ours, fact) {
					t.Errorf("our output lacks %q", fact)
				}
			}
		})
	}
}
