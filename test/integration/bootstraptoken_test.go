package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// Test-only tokens of the phase configuration: one for joining nodes, one
// that never expires with custom groups, one for authentication only.
const (
	btNodeID, btNodeSecret = "nodetk", "0123456789abcdef"
	btForeverID            = "forevr"
	btAuthOnlyID           = "authon"
	btConfigPath           = "/bootstrap-token.yaml"
)

// bootstrapTokenConfig is the default configuration with the test tokens.
func bootstrapTokenConfig(cp *controlplane.ControlPlane) string {
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: ` + cp.AdvertiseAddress().String() + `
nodeRegistration:
  name: ` + controlplane.DefaultNodeName + `
bootstrapTokens:
- token: ` + btNodeID + `.` + btNodeSecret + `
  description: joins the test nodes
- token: ` + btForeverID + `.0123456789abcdef
  ttl: 0s
  groups: [system:bootstrappers:it:a, system:bootstrappers:it:b]
- token: ` + btAuthOnlyID + `.0123456789abcdef
  usages: [authentication]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ` + controlplane.KubernetesVersion + `
`
}

// One control plane serves every check, in order: the phase's objects are
// what the later checks use.
func TestBootstrapTokens(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	if err := os.WriteFile(cp.HostPath(btConfigPath), []byte(bootstrapTokenConfig(cp)), 0o600); err != nil {
		t.Fatal(err)
	}

	var first map[string]any
	t.Run("phase creates the tokens, RBAC and cluster-info", func(t *testing.T) { first = testPhaseCreates(t, cp) })
	t.Run("running the phase again converges", func(t *testing.T) { testPhaseConverges(t, cp, first) })
	t.Run("objects match upstream kubeadm's", func(t *testing.T) { testPhaseMatchesUpstream(t, cp, first) })
	t.Run("bootstrap signer signs cluster-info for the signing tokens", func(t *testing.T) { testClusterInfoSigned(t, cp) })
	t.Run("anonymous users read cluster-info and nothing else", func(t *testing.T) { testAnonymousClusterInfo(t, cp) })
	t.Run("a token holder's node CSR is approved and issued", func(t *testing.T) { testTokenCSR(t, cp) })
	t.Run("token create, list and delete", func(t *testing.T) { testTokenCommands(t, cp) })
	t.Run("the token cleaner removes an expired token", func(t *testing.T) { testExpiredTokenCleaned(t, cp) })
}

func runOurs(t *testing.T, cp *controlplane.ControlPlane, args ...string) string {
	t.Helper()
	out, err := cp.KubeadmCommand(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func testPhaseCreates(t *testing.T, cp *controlplane.ControlPlane) map[string]any {
	out := runOurs(t, cp, "init", "phase", "bootstrap-token", "--config", btConfigPath)
	want := "[bootstrap-token] Using tokens: [" + btNodeID + "." + btNodeSecret + " " + btForeverID + ".0123456789abcdef " + btAuthOnlyID + ".0123456789abcdef]\n" +
		`[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles
[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes
[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials
[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token
[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster
[bootstrap-token] Configured RBAC rules to allow the API server kubelet client certificate to access the kubelet API
[bootstrap-token] Creating the "cluster-info" ConfigMap in the "kube-public" namespace
`
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	ctx := testContext(t, 30*time.Second)
	cs := cp.Client()
	got := phaseObjects(ctx, t, cs)

	wantData := map[string]map[string]string{
		btNodeID: {"token-id": btNodeID, "token-secret": btNodeSecret, "description": "joins the test nodes", "expiration": "<set>",
			"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"},
		btForeverID: {"token-id": btForeverID, "token-secret": "0123456789abcdef",
			"usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:it:a,system:bootstrappers:it:b"},
		btAuthOnlyID: {"token-id": btAuthOnlyID, "token-secret": "0123456789abcdef", "expiration": "<set>",
			"usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token"},
	}
	for id, data := range wantData {
		s, ok := got["Secret kube-system/bootstrap-token-"+id].(map[string]any)
		if !ok {
			t.Errorf("no Secret for token %s", id)
			continue
		}
		if s["type"] != "bootstrap.kubernetes.io/token" {
			t.Errorf("token %s: type %v", id, s["type"])
		}
		decoded := map[string]string{}
		for k, v := range s["data"].(map[string]any) {
			decoded[k] = v.(string)
		}
		if !reflect.DeepEqual(decoded, data) {
			t.Errorf("token %s data\n got %v\nwant %v", id, decoded, data)
		}
	}
	// The node token expires in 24h, counted from the run.
	sec, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+btNodeID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339, string(sec.Data["expiration"]))
	if err != nil || time.Until(exp) < 23*time.Hour || time.Until(exp) > 24*time.Hour {
		t.Errorf("expiration %s (%v)", sec.Data["expiration"], err)
	}

	// RBAC: the package's objects, with the subjects' apiGroup the API
	// server fills in.
	for _, o := range []runtime.Object{
		bootstraptoken.GetNodesClusterRole(), bootstraptoken.GetNodesBinding(), bootstraptoken.KubeletBootstrapBinding(),
		bootstraptoken.NodeAutoApproveBootstrapBinding(), bootstraptoken.NodeAutoApproveRotationBinding(),
		bootstraptoken.APIServerKubeletClientBinding(), bootstraptoken.ClusterInfoReaderRole(), bootstraptoken.ClusterInfoReaderBinding(),
	} {
		key, want := normalized(t, o)
		if subjects, ok := want["subjects"].([]any); ok {
			for _, s := range subjects {
				s.(map[string]any)["apiGroup"] = "rbac.authorization.k8s.io"
			}
		}
		if !reflect.DeepEqual(got[key], want) {
			t.Errorf("%s\n got %v\nwant %v", key, got[key], want)
		}
	}

	// cluster-info: admin.conf's cluster, CA and server only.
	ca, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	cm := got["ConfigMap kube-public/cluster-info"].(map[string]any)["data"].(map[string]any)
	var kc struct {
		Clusters []struct {
			Name    string `json:"name"`
			Cluster struct {
				Server string `json:"server"`
				CAData []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users    []any `json:"users"`
		Contexts []any `json:"contexts"`
	}
	if err := yaml.Unmarshal([]byte(cm["kubeconfig"].(string)), &kc); err != nil {
		t.Fatal(err)
	}
	if len(kc.Clusters) != 1 || kc.Clusters[0].Name != "" || kc.Clusters[0].Cluster.Server != cp.Endpoint() ||
		string(kc.Clusters[0].Cluster.CAData) != string(ca) || kc.Users != nil || kc.Contexts != nil {
		t.Errorf("cluster-info kubeconfig:\n%s", cm["kubeconfig"])
	}
	return got
}

func testPhaseConverges(t *testing.T, cp *controlplane.ControlPlane, first map[string]any) {
	if first == nil {
		t.Skip("the first run failed")
	}
	runOurs(t, cp, "init", "phase", "bootstrap-token", "--config", btConfigPath, "--skip-token-print")
	ctx := testContext(t, 30*time.Second)
	if second := phaseObjects(ctx, t, cp.Client()); !reflect.DeepEqual(first, second) {
		t.Errorf("objects after the second run differ:\n%s", yamlDiff(first, second))
	}
}

// testPhaseMatchesUpstream removes the phase's objects, runs upstream
// kubeadm's phase with the same configuration and compares what it made
// with what ours made; then ours runs on top of upstream's objects and
// must leave what it makes alone.
func testPhaseMatchesUpstream(t *testing.T, cp *controlplane.ControlPlane, ours map[string]any) {
	upstream, err := filepath.Abs(filepath.Join("..", "..", ".cache", "upstream", controlplane.KubernetesVersion, "kubeadm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(upstream); err != nil {
		t.Skipf("upstream kubeadm not built (%v); build it to compare", err)
	}
	if ours == nil {
		t.Skip("the first run failed")
	}
	ctx := testContext(t, 60*time.Second)
	cs := cp.Client()
	removePhaseObjects(ctx, t, cs)
	out, err := cp.Command(upstream, "init", "phase", "bootstrap-token", "--config", btConfigPath, "--rootfs", cp.Root()).CombinedOutput()
	if err != nil {
		t.Fatalf("upstream kubeadm: %v\n%s", err, out)
	}
	if theirs := phaseObjects(ctx, t, cs); !reflect.DeepEqual(theirs, ours) {
		t.Errorf("upstream's objects (first) differ from ours (second):\n%s", yamlDiff(theirs, ours))
	}
	runOurs(t, cp, "init", "phase", "bootstrap-token", "--config", btConfigPath, "--skip-token-print")
	if again := phaseObjects(ctx, t, cs); !reflect.DeepEqual(again, ours) {
		t.Errorf("ours on top of upstream's objects (first) differ from ours alone (second):\n%s", yamlDiff(again, ours))
	}
}

func testClusterInfoSigned(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	cs := cp.Client()
	var cm *corev1.ConfigMap
	eventually(ctx, t, "the bootstrap signer signs cluster-info", func() error {
		var err error
		cm, err = cs.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, id := range []string{btNodeID, btForeverID} {
			if _, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]; !ok {
				return fmt.Errorf("no signature for %s yet", id)
			}
		}
		return nil
	})
	kubeconfig := []byte(cm.Data[bootstrapapi.KubeConfigKey])
	if err := verifyDetachedJWS(cm.Data[bootstrapapi.JWSSignatureKeyPrefix+btNodeID], kubeconfig, btNodeID, btNodeSecret); err != nil {
		t.Errorf("signature for %s: %v", btNodeID, err)
	}
	if _, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+btAuthOnlyID]; ok {
		t.Errorf("cluster-info is signed for %s, which lacks the signing usage", btAuthOnlyID)
	}
}

// bareConfig is a REST config for the API server with the cluster CA and
// no credentials.
func bareConfig(t *testing.T, cp *controlplane.ControlPlane) *rest.Config {
	t.Helper()
	cfg, err := cp.RESTConfig(cp.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile = nil, nil, "", ""
	return cfg
}

func testAnonymousClusterInfo(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 30*time.Second)
	anon, err := apiclient.FromRESTConfig(bareConfig(t, cp), 0)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := anon.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("anonymous get of cluster-info: %v", err)
	}
	if !strings.Contains(cm.Data["kubeconfig"], cp.Endpoint()) {
		t.Errorf("cluster-info as anonymous:\n%s", cm.Data["kubeconfig"])
	}
	if _, err := anon.CoreV1().ConfigMaps("kube-public").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("anonymous get of another ConfigMap: %v, want Forbidden", err)
	}
	if _, err := anon.CoreV1().ConfigMaps("kube-public").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("anonymous list of kube-public ConfigMaps: %v, want Forbidden", err)
	}
}

func testTokenCSR(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	cfg := bareConfig(t, cp)
	cfg.BearerToken = btNodeID + "." + btNodeSecret
	node, err := kubernetes.NewForConfig(cfg) // client-go's typed clients: the test plays the kubelet, whose CSR kubeadm never touches
	if err != nil {
		t.Fatal(err)
	}
	review := whoAmI(ctx, t, node.Discovery().RESTClient())
	if review.Username != "system:bootstrap:"+btNodeID {
		t.Errorf("the token authenticates as %q in %q", review.Username, review.Groups)
	}
	// A joining node reads its Node first (kubeadm:get-nodes): NotFound, not Forbidden.
	if _, err := node.CoreV1().Nodes().Get(ctx, "joining-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting a Node with the token: %v, want NotFound", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:joining-node", Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	began := time.Now()
	created, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("posting the CSR with the token: %v", err)
	}
	var issued []byte
	eventually(ctx, t, "the controller manager approves and signs the CSR", func() error {
		got, err := node.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Certificate) == 0 {
			return fmt.Errorf("not issued yet (conditions %v)", got.Status.Conditions)
		}
		approved := false
		for _, c := range got.Status.Conditions {
			approved = approved || (c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue)
		}
		if !approved {
			return fmt.Errorf("issued without the Approved condition: %v", got.Status.Conditions)
		}
		issued = got.Status.Certificate
		return nil
	})
	t.Logf("CSR approved and issued %v after it was posted", time.Since(began).Round(time.Millisecond))
	cert, err := pki.ParseCertPEM(issued)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCert(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:joining-node" || cert.CheckSignatureFrom(ca) != nil {
		t.Errorf("issued certificate for %q, signed by the cluster CA: %v", cert.Subject, cert.CheckSignatureFrom(ca))
	}
}

func testTokenCommands(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	cs := cp.Client()
	kc := "--kubeconfig=/etc/kubernetes/admin.conf"
	ca, err := pki.LoadCert(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}

	// --dry-run creates nothing.
	runOurs(t, cp, "token", "create", "drytok.0123456789abcdef", "--dry-run", kc)
	if _, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-drytok", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run created its token (%v)", err)
	}

	out := runOurs(t, cp, "token", "create", "--print-join-command", "--ttl", "2h", "--description", "integration", kc)
	m := regexp.MustCompile(`^kubeadm join (\S+) --token ([a-z0-9]{6})\.([a-z0-9]{16}) --discovery-token-ca-cert-hash (\S+) \n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("join command %q", out)
	}
	if want := cp.AdvertiseAddress().String() + ":6443"; m[1] != want {
		t.Errorf("join endpoint %s, want %s", m[1], want)
	}
	if want := bootstraptoken.CACertHash(ca); m[4] != want {
		t.Errorf("CA hash %s, want %s", m[4], want)
	}
	id := m[2]

	if out, err := cp.KubeadmCommand("token", "create", id+"."+m[3], kc).CombinedOutput(); err == nil || !strings.Contains(string(out), fmt.Sprintf("a token with id %q already exists", id)) {
		t.Errorf("creating the token again: %v\n%s", err, out)
	}

	listed := runOurs(t, cp, "token", "list", kc)
	if !regexp.MustCompile(`(?m)^` + id + `\.[a-z0-9]{16}   1h {10}\S+   authentication,signing   integration {48}system:bootstrappers:kubeadm:default-node-token$`).MatchString(listed) {
		t.Errorf("token list:\n%s", listed)
	}
	var tok bootstraptoken.Output
	js := runOurs(t, cp, "token", "list", "-o", `jsonpath={.token}{"\n"}`, kc)
	if !strings.Contains(js, "\n"+id+".") && !strings.HasPrefix(js, id+".") {
		t.Errorf("jsonpath listing %q", js)
	}
	yml := runOurs(t, cp, "token", "list", "-o", "yaml", kc)
	for _, doc := range strings.Split(yml, "---\n") {
		var o bootstraptoken.Output
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("token list -o yaml: %v\n%s", err, yml)
		}
		if o.Token != nil && o.Token.ID == id {
			tok = o
		}
	}
	if tok.Kind != "BootstrapToken" || tok.APIVersion != "output.kubeadm.k8s.io/v1alpha3" || tok.Description != "integration" || tok.Expires == nil {
		t.Errorf("the new token in YAML: %+v", tok)
	}

	if out := runOurs(t, cp, "token", "delete", id, kc); out != fmt.Sprintf("bootstrap token %q deleted\n", id) {
		t.Errorf("token delete: %q", out)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+id, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted token's Secret: %v", err)
	}
	if out, err := cp.KubeadmCommand("token", "delete", id, kc).CombinedOutput(); err == nil || !strings.Contains(string(out), "not found") {
		t.Errorf("deleting it again: %v\n%s", err, out)
	}
}

func testExpiredTokenCleaned(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 60*time.Second)
	cs := cp.Client()
	past := metav1.NewTime(time.Now().Add(-time.Minute))
	tok := kubeadm.BootstrapToken{
		Token:   &kubeadm.BootstrapTokenString{ID: "expird", Secret: "0123456789abcdef"},
		Expires: &past,
		Usages:  []string{"signing", "authentication"},
	}
	if err := bootstraptoken.CreateOrUpdate(ctx, cs, []kubeadm.BootstrapToken{tok}, time.Now()); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	eventually(ctx, t, "the token cleaner deletes the expired token", func() error {
		_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-expird", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return fmt.Errorf("still there")
		}
		return err
	})
	t.Logf("expired token removed %v after it was created", time.Since(began).Round(time.Millisecond))
}

// phaseKeys name the objects the phase manages, as phaseObjects keys them.
var phaseKeys = []struct{ kind, ns, name string }{
	{"Secret", "kube-system", "bootstrap-token-" + btNodeID},
	{"Secret", "kube-system", "bootstrap-token-" + btForeverID},
	{"Secret", "kube-system", "bootstrap-token-" + btAuthOnlyID},
	{"ClusterRole", "", "kubeadm:get-nodes"},
	{"ClusterRoleBinding", "", "kubeadm:get-nodes"},
	{"ClusterRoleBinding", "", "kubeadm:kubelet-bootstrap"},
	{"ClusterRoleBinding", "", "kubeadm:node-autoapprove-bootstrap"},
	{"ClusterRoleBinding", "", "kubeadm:node-autoapprove-certificate-rotation"},
	{"ClusterRoleBinding", "", "kubeadm:apiserver-kubelet-client"},
	{"Role", "kube-public", "kubeadm:bootstrap-signer-clusterinfo"},
	{"RoleBinding", "kube-public", "kubeadm:bootstrap-signer-clusterinfo"},
	{"ConfigMap", "kube-public", "cluster-info"},
}

// phaseObjects reads the phase's objects as generic values, without the
// fields the API server sets (uid, resourceVersion, creationTimestamp,
// managedFields), token expirations (shown as "<set>"), Secret data
// decoded, and cluster-info's signatures.
func phaseObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, k := range phaseKeys {
		var obj runtime.Object
		var err error
		switch k.kind {
		case "Secret":
			obj, err = cs.CoreV1().Secrets(k.ns).Get(ctx, k.name, metav1.GetOptions{})
		case "ConfigMap":
			obj, err = cs.CoreV1().ConfigMaps(k.ns).Get(ctx, k.name, metav1.GetOptions{})
		case "ClusterRole":
			obj, err = cs.RbacV1().ClusterRoles().Get(ctx, k.name, metav1.GetOptions{})
		case "ClusterRoleBinding":
			obj, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, k.name, metav1.GetOptions{})
		case "Role":
			obj, err = cs.RbacV1().Roles(k.ns).Get(ctx, k.name, metav1.GetOptions{})
		case "RoleBinding":
			obj, err = cs.RbacV1().RoleBindings(k.ns).Get(ctx, k.name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatalf("reading %s %s: %v", k.kind, k.name, err)
		}
		key, v := normalized(t, obj)
		out[key] = v
	}
	return out
}

// normalized turns a typed object into the generic value phaseObjects
// keeps, and its key "Kind namespace/name".
func normalized(t *testing.T, obj runtime.Object) (string, map[string]any) {
	t.Helper()
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "kind")
	delete(v, "apiVersion")
	md := v["metadata"].(map[string]any)
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		delete(md, f)
	}
	if data, ok := v["data"].(map[string]any); ok {
		for k, val := range data {
			switch {
			case strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix):
				delete(data, k)
			case kind == "Secret" && k == "expiration":
				data[k] = "<set>"
			case kind == "Secret":
				raw, _ := json.Marshal(val)
				var decoded []byte
				_ = json.Unmarshal(raw, &decoded)
				data[k] = string(decoded)
			}
		}
	}
	name := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name, v
}

// removePhaseObjects deletes what the phase creates.
func removePhaseObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	for _, k := range phaseKeys {
		var err error
		switch k.kind {
		case "Secret":
			err = cs.CoreV1().Secrets(k.ns).Delete(ctx, k.name, metav1.DeleteOptions{})
		case "ConfigMap":
			err = cs.CoreV1().ConfigMaps(k.ns).Delete(ctx, k.name, metav1.DeleteOptions{})
		case "ClusterRole":
			err = cs.RbacV1().ClusterRoles().Delete(ctx, k.name, metav1.DeleteOptions{})
		case "ClusterRoleBinding":
			err = cs.RbacV1().ClusterRoleBindings().Delete(ctx, k.name, metav1.DeleteOptions{})
		case "Role":
			err = cs.RbacV1().Roles(k.ns).Delete(ctx, k.name, metav1.DeleteOptions{})
		case "RoleBinding":
			err = cs.RbacV1().RoleBindings(k.ns).Delete(ctx, k.name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting %s %s: %v", k.kind, k.name, err)
		}
	}
}

// yamlDiff shows the entries of a and b that differ.
func yamlDiff(a, b map[string]any) string {
	var s strings.Builder
	for k := range a {
		if !reflect.DeepEqual(a[k], b[k]) {
			x, _ := yaml.Marshal(a[k])
			y, _ := yaml.Marshal(b[k])
			fmt.Fprintf(&s, "%s:\n--- first\n%s--- second\n%s", k, x, y)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			fmt.Fprintf(&s, "%s: only in the second\n", k)
		}
	}
	return s.String()
}
