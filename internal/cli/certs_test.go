package cli

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/uploadconfig"
)

func certsTestNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

// certsTestEnv points the certs commands at dir/kubernetes and a fixed
// clock and machine.
func certsTestEnv(dir string) certsEnv {
	return certsEnv{
		kubernetesDir: filepath.Join(dir, "kubernetes"),
		now:           certsTestNow,
		loadEnv: func(io.Writer) config.Environment {
			return config.Environment{
				Hostname:       func() (string, error) { return "node1", nil },
				DefaultAddress: func() (net.IP, error) { return net.ParseIP("192.168.1.10"), nil },
				CRISocket:      func() (string, error) { return "unix:///run/containerd/containerd.sock", nil },
				ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
				NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
				Warn:           func(string, ...any) {},
			}
		},
		// No cluster, as on a node kubeadm has not set up.
		clusterClient: func(path string) (kubernetes.Interface, error) {
			return nil, fmt.Errorf("no kubeconfig file %s", path)
		},
		// No renewal schedule and no init system.
		renewal: renewalEnv{root: filepath.Join(dir, "root"), host: noInitSystem{}},
	}
}

// certsTestCluster is a cluster holding the configuration of the file at
// path (with certificatesDir set to certDir) in its ConfigMaps.
func certsTestCluster(t *testing.T, env certsEnv, path, certDir string) kubernetes.Interface {
	t.Helper()
	cc, err := loadCertsConfig(context.Background(), env.loadEnv(io.Discard), path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc.cfg.CertificatesDir = certDir
	cs := fake.NewClientset()
	for _, build := range []func(*kubeadm.ClusterConfiguration) (*corev1.ConfigMap, error){uploadconfig.KubeadmConfig, uploadconfig.KubeletConfig} {
		cm, err := build(&cc.cfg.ClusterConfiguration)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

func runCerts(t *testing.T, env certsEnv, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newCertsCmdWith(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, env)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	if err != nil {
		exitcode.Print(&out, err)
	}
	return out.String(), exitcode.Of(err)
}

// certsTestConfig writes a configuration file using ECDSA keys (quick to
// make) and dir/pki, and returns its path.
func certsTestConfig(t *testing.T, dir, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeadm.yaml")
	data := `apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 192.168.1.10
nodeRegistration:
  name: node1
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
encryptionAlgorithm: ECDSA-P256
certificatesDir: ` + filepath.Join(dir, "pki") + "\n" + extra
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// certsTestTree creates the certificates of the configuration at path and
// the kubeconfig files of dir/kubernetes.
func certsTestTree(t *testing.T, env certsEnv, path string) *kubeadm.InitConfiguration {
	t.Helper()
	cc, err := loadCertsConfig(context.Background(), env.loadEnv(io.Discard), path, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cc.cfg
	if _, _, err := pki.EnsureAll(context.Background(), cfg, cfg.CertificatesDir, pki.Options{Now: certsTestNow}, 2); err != nil {
		t.Fatal(err)
	}
	ca, caKey, err := pki.LoadCertAndKey(cfg.CertificatesDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(env.kubernetesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range pki.KubeconfigTable() {
		key, _ := pki.NewPrivateKey(cfg.EncryptionAlgorithm)
		partial, err := pki.PartialKubeconfig(cfg, k, key)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.NewSignedCert(k.Spec(cfg), key.Public(), ca, caKey, certsTestNow())
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		yaml.Unmarshal(partial, &doc)
		doc["users"].([]any)[0].(map[string]any)["user"].(map[string]any)["client-certificate-data"] = base64.StdEncoding.EncodeToString(pki.EncodeCertPEM(cert))
		b, _ := yaml.Marshal(doc)
		if err := os.WriteFile(filepath.Join(env.kubernetesDir, k.File), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func TestCertsCertificateKey(t *testing.T) {
	env := certsTestEnv(t.TempDir())
	a, code := runCerts(t, env, "certificate-key")
	b, _ := runCerts(t, env, "certificate-key")
	raw, err := hex.DecodeString(strings.TrimSuffix(a, "\n"))
	if code != 0 || err != nil || len(raw) != 32 || a == b {
		t.Errorf("%q %q (code %d, %v)", a, b, code, err)
	}
}

func TestCertsCheckExpiration(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	cfg := certsTestTree(t, env, cfgPath)
	os.Remove(filepath.Join(env.kubernetesDir, "scheduler.conf"))
	os.Remove(pki.KeyPath(cfg.CertificatesDir, "front-proxy-ca"))
	env.now = func() time.Time { return certsTestNow().Add(30 * 24 * time.Hour) }

	out, code := runCerts(t, env, "check-expiration", "--config", cfgPath)
	want := `CERTIFICATE                EXPIRES                  RESIDUAL TIME   CERTIFICATE AUTHORITY   EXTERNALLY MANAGED
admin.conf                 Mar 04, 2027 05:06 UTC   335d            ca                      no      
apiserver                  Mar 04, 2027 05:06 UTC   335d            ca                      no      
apiserver-etcd-client      Mar 04, 2027 05:06 UTC   335d            etcd-ca                 no      
apiserver-kubelet-client   Mar 04, 2027 05:06 UTC   335d            ca                      no      
controller-manager.conf    Mar 04, 2027 05:06 UTC   335d            ca                      no      
etcd-healthcheck-client    Mar 04, 2027 05:06 UTC   335d            etcd-ca                 no      
etcd-peer                  Mar 04, 2027 05:06 UTC   335d            etcd-ca                 no      
etcd-server                Mar 04, 2027 05:06 UTC   335d            etcd-ca                 no      
front-proxy-client         Mar 04, 2027 05:06 UTC   335d            front-proxy-ca          yes     
!MISSING! scheduler.conf                                                                    
super-admin.conf           Mar 04, 2027 05:06 UTC   335d            ca                      no      

CERTIFICATE AUTHORITY   EXPIRES                  RESIDUAL TIME   EXTERNALLY MANAGED
ca                      Mar 01, 2036 05:06 UTC   9y              no      
etcd-ca                 Mar 01, 2036 05:06 UTC   9y              no      
front-proxy-ca          Mar 01, 2036 05:06 UTC   9y              yes     

Automatic renewal: not installed (no kubeadm-certs-renewal timer or periodic script; "kubeadm init phase certs-renewal" installs it)
Last renewal run: never
`
	if code != 0 || out != want {
		t.Errorf("code %d, output:\n%s\nwant:\n%s", code, out, want)
	}

	// Without --config and without a cluster: the defaults, quietly, and
	// the flag's folder.
	out, code = runCerts(t, env, "check-expiration", "--cert-dir", cfg.CertificatesDir)
	if code != 0 || out != want {
		t.Errorf("code %d:\n%s", code, out)
	}
	// Without --config on a control-plane node: the cluster's
	// configuration, here with an external etcd, so no etcd certificates;
	// the folder is still the flag's.
	ext := certsTestConfig(t, t.TempDir(), "etcd:\n  external:\n    endpoints: [\"https://10.0.0.5:2379\"]\n")
	withCluster := env
	withCluster.clusterClient = func(path string) (kubernetes.Interface, error) {
		if path != "/etc/kubernetes/admin.conf" {
			t.Errorf("kubeconfig %q, want admin.conf", path)
		}
		return certsTestCluster(t, env, ext, "/elsewhere"), nil
	}
	out, code = runCerts(t, withCluster, "check-expiration", "--cert-dir", cfg.CertificatesDir)
	wantCluster := "[check-expiration] Reading the cluster's configuration from the \"kubeadm-config\" ConfigMap in the \"kube-system\" namespace\n\n"
	if code != 0 || !strings.HasPrefix(out, wantCluster+"CERTIFICATE ") || strings.Contains(out, "etcd-server") || !strings.Contains(out, "\napiserver ") {
		t.Errorf("from the cluster: code %d:\n%s", code, out)
	}
	out, code = runCerts(t, withCluster, "check-expiration", "--cert-dir", cfg.CertificatesDir, "-o", "yaml")
	if code != 0 || !strings.HasPrefix(out, "apiVersion: output.kubeadm.k8s.io/v1alpha3\n") {
		t.Errorf("from the cluster, as YAML: code %d:\n%s", code, out)
	}
	// A cluster whose configuration cannot be read: said, then the defaults.
	withCluster.clusterClient = func(string) (kubernetes.Interface, error) { return fake.NewClientset(), nil }
	out, code = runCerts(t, withCluster, "check-expiration", "--cert-dir", cfg.CertificatesDir)
	if code != 0 || !strings.HasPrefix(out, "[check-expiration] Reading ") ||
		!strings.Contains(out, "\n[check-expiration] Could not read the cluster's configuration, so the default one is used: ") ||
		!strings.HasSuffix(out, "\n\n"+want) {
		t.Errorf("unreadable cluster configuration: code %d:\n%s", code, out)
	}

	out, code = runCerts(t, env, "check-expiration", "--config", cfgPath, "-o", "json")
	var doc struct {
		Kind         string `json:"kind"`
		APIVersion   string `json:"apiVersion"`
		Certificates []struct {
			Name           string  `json:"name"`
			ExpirationDate *string `json:"expirationDate"`
			ResidualTime   int64   `json:"residualTime"`
			CAName         string  `json:"caName"`
			Missing        bool    `json:"missing"`
		} `json:"certificates"`
		CertificateAuthorities []json.RawMessage `json:"certificateAuthorities"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("%v (code %d):\n%s", err, code, out)
	}
	if doc.Kind != "CertificateExpirationInfo" || doc.APIVersion != "output.kubeadm.k8s.io/v1alpha3" ||
		len(doc.Certificates) != 11 || len(doc.CertificateAuthorities) != 3 {
		t.Errorf("json: %s", out)
	}
	if c := doc.Certificates[1]; c.Name != "apiserver" || c.ResidualTime != 335*24*3600 || c.CAName != "ca" || *c.ExpirationDate != "2027-03-04T05:06:07Z" {
		t.Errorf("apiserver entry %+v", c)
	}
	if c := doc.Certificates[9]; !c.Missing || c.ExpirationDate != nil || c.CAName != "" {
		t.Errorf("missing entry %+v", c)
	}
	if !strings.HasPrefix(out, "{\n    \"kind\": \"CertificateExpirationInfo\",\n    \"apiVersion\"") {
		t.Errorf("json layout:\n%s", out)
	}
	out, code = runCerts(t, env, "check-expiration", "--config", cfgPath, "-o", "yaml")
	if code != 0 || !strings.Contains(out, "kind: CertificateExpirationInfo\n") || !strings.Contains(out, "- expirationDate: null\n") {
		t.Errorf("yaml:\n%s", out)
	}
	if _, code := runCerts(t, env, "check-expiration", "-o", "wide"); code != exitcode.Validation {
		t.Errorf("unknown format: code %d", code)
	}

	os.Remove(pki.CertPath(cfg.CertificatesDir, "front-proxy-client"))
	if out, code := runCerts(t, env, "check-expiration", "--config", cfgPath); code == 0 || !strings.Contains(out, "front-proxy-client.crt") {
		t.Errorf("incomplete external CA: code %d\n%s", code, out)
	}
}

func TestCertsGenerateCSR(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	out, code := runCerts(t, env, "generate-csr", "--config", cfgPath, "--kubeconfig-dir", filepath.Join(dir, "k"))
	pkiDir := filepath.Join(dir, "pki")
	want := "generating keys and CSRs in " + pkiDir + `
  apiserver
  apiserver-kubelet-client
  front-proxy-client
  etcd/server
  etcd/peer
  etcd/healthcheck-client
  apiserver-etcd-client
generating keys and CSRs in ` + filepath.Join(dir, "k") + `
  admin.conf
  super-admin.conf
  kubelet.conf
  controller-manager.conf
  scheduler.conf
`
	if code != 0 || out != want {
		t.Fatalf("code %d:\n%s\nwant:\n%s", code, out, want)
	}
	for _, p := range pki.CSRTargets(pkiDir, filepath.Join(dir, "k")) {
		if info, err := os.Stat(p); err != nil || info.Mode() != 0o600 {
			t.Errorf("%s: %v %v", p, info, err)
		}
	}
	// --cert-dir wins over the configuration.
	other := filepath.Join(dir, "other")
	if _, code := runCerts(t, env, "generate-csr", "--config", cfgPath, "--cert-dir", other, "--kubeconfig-dir", filepath.Join(dir, "k2")); code != 0 {
		t.Fatal(code)
	}
	if _, err := os.Stat(pki.CSRPath(other, "etcd/peer")); err != nil {
		t.Error(err)
	}
	if out, code := runCerts(t, env, "generate-csr", "--config", cfgPath, "--kubeconfig-dir", filepath.Join(dir, "k")); code == 0 || !strings.Contains(out, "already exists") {
		t.Errorf("second run: %d %s", code, out)
	}
}

func TestCertsRenew(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	cfg := certsTestTree(t, env, cfgPath)
	env.now = func() time.Time { return certsTestNow().Add(200 * 24 * time.Hour) }
	oldAdmin, _ := pki.ReadKubeconfigClientCert(filepath.Join(env.kubernetesDir, "admin.conf"))
	oldKubelet, _ := os.ReadFile(filepath.Join(env.kubernetesDir, "kubelet.conf"))

	out, code := runCerts(t, env, "renew", "all", "--config", cfgPath)
	if code != 0 || strings.Count(out, " renewed\n") != 11 || !strings.HasSuffix(out, "\n\nDone renewing certificates. Restart kube-apiserver, kube-controller-manager, kube-scheduler and etcd so that they use the new certificates.\n") {
		t.Errorf("code %d:\n%s", code, out)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[0], "admin.conf") || !strings.Contains(lines[1], "Kubernetes API server") {
		t.Errorf("not in kubeadm's (alphabetical) order:\n%s", out)
	}
	admin, err := pki.ReadKubeconfigClientCert(filepath.Join(env.kubernetesDir, "admin.conf"))
	if err != nil || !admin.NotAfter.Equal(env.now().Add(365*24*time.Hour)) || admin.Subject.String() != oldAdmin.Subject.String() {
		t.Errorf("admin.conf: %v %v", admin, err)
	}
	if b, _ := os.ReadFile(filepath.Join(env.kubernetesDir, "kubelet.conf")); !bytes.Equal(b, oldKubelet) {
		t.Error("kubelet.conf must be left to the kubelet")
	}
	api, _ := pki.LoadCert(pki.CertPath(cfg.CertificatesDir, "apiserver"))
	if !api.NotAfter.Equal(env.now().Add(365 * 24 * time.Hour)) {
		t.Errorf("apiserver not renewed: %s", api.NotAfter)
	}

	os.Remove(pki.KeyPath(cfg.CertificatesDir, "front-proxy-ca"))
	os.Remove(pki.CertPath(cfg.CertificatesDir, "apiserver"))
	out, code = runCerts(t, env, "renew", "front-proxy-client", "--config", cfgPath)
	if code != 0 || !strings.HasPrefix(out, "Detected external CA ("+pki.KeyPath(cfg.CertificatesDir, "front-proxy-ca")) || strings.Contains(out, "Done") {
		t.Errorf("external CA: %d\n%s", code, out)
	}
	out, code = runCerts(t, env, "renew", "apiserver", "--cert-dir", cfg.CertificatesDir)
	if code != 0 || out != "[renew] New keys are ECDSA-P256, the algorithm of the cluster CA's key\nMISSING! serving certificate of the Kubernetes API server\n" {
		t.Errorf("missing: %d\n%s", code, out)
	}

	ext := certsTestConfig(t, dir, "etcd:\n  external:\n    endpoints: [\"https://10.0.0.5:2379\"]\n")
	out, code = runCerts(t, env, "renew", "etcd-server", "--config", ext)
	if code != 0 || out != "MISSING! serving certificate of etcd\n" {
		t.Errorf("external etcd: %d %q", code, out)
	}
}

// TestCertsRenewOfflineKeepsAlgorithm: with no --config and no cluster
// answering (its certificates expired, say), a renewal makes keys of the
// cluster CA's algorithm, not the default RSA-2048.
func TestCertsRenewOfflineKeepsAlgorithm(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfg := certsTestTree(t, env, certsTestConfig(t, dir, "")) // ECDSA-P256
	var algs []kubeadm.EncryptionAlgorithmType
	env.newKey = func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
		algs = append(algs, alg)
		return pki.NewPrivateKey(alg)
	}
	for _, args := range [][]string{
		{"renew", "apiserver", "--cert-dir", cfg.CertificatesDir},
		{"renew", "expiring", "--cert-dir", cfg.CertificatesDir, "--within", "9000h", "--restart-components=false"},
	} {
		algs = nil
		out, code := runCerts(t, env, args...)
		if code != 0 || !strings.Contains(out, "New keys are ECDSA-P256, the algorithm of the cluster CA's key") {
			t.Fatalf("%v: code %d\n%s", args, code, out)
		}
		if len(algs) == 0 {
			t.Fatalf("%v made no key", args)
		}
		for _, a := range algs {
			if a != "ECDSA-P256" {
				t.Errorf("%v made a %s key", args, a)
			}
		}
		api, err := pki.LoadCert(pki.CertPath(cfg.CertificatesDir, "apiserver"))
		if err != nil {
			t.Fatal(err)
		}
		if alg, _ := pki.KeyAlgorithmOf(api.PublicKey); alg != "ECDSA-P256" {
			t.Errorf("%v: the renewed apiserver certificate has a %s key", args, alg)
		}
	}
}

func TestCertsCommandTree(t *testing.T) {
	cmd := newCertsCmd(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var renew []string
	for _, c := range cmd.Commands() {
		if c.Name() == "renew" {
			for _, r := range c.Commands() {
				renew = append(renew, r.Name())
				for _, f := range []string{"cert-dir", "config", "kubeconfig"} {
					if r.Flags().Lookup(f) == nil {
						t.Errorf("renew %s: no --%s", r.Name(), f)
					}
				}
			}
		}
	}
	want := "admin.conf all apiserver apiserver-etcd-client apiserver-kubelet-client controller-manager.conf etcd-healthcheck-client etcd-peer etcd-server expiring front-proxy-client scheduler.conf super-admin.conf"
	if got := strings.Join(renew, " "); got != want {
		t.Errorf("renew sub-commands %s\nwant %s", got, want)
	}
	if len(cmd.Aliases) != 1 || cmd.Aliases[0] != "certificates" {
		t.Errorf("aliases %v", cmd.Aliases)
	}
	out, _, code := run(t, "init", "phase", "certs", "apiserver", "--help")
	for _, f := range []string{"--apiserver-advertise-address", "--apiserver-cert-extra-sans", "--cert-dir", "--config", "--control-plane-endpoint", "--dry-run", "--kubernetes-version", "--service-cidr", "--service-dns-domain"} {
		if !strings.Contains(out, f) {
			t.Errorf("init phase certs apiserver lacks %s (code %d)", f, code)
		}
	}
	if strings.Contains(out, "--node-name") {
		t.Error("init phase certs apiserver must not take --node-name")
	}
}

// TestCertsRenewHardened: under the CISHardening gate "renew all" renews
// the approver's kubeconfig as well and writes certificates with mode 0600.
func TestCertsRenewHardened(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "featureGates:\n  CISHardening: true\n")
	cfg := certsTestTree(t, env, cfgPath)
	// The approver's kubeconfig: any client certificate the CA signed.
	approver := cis.ApproverKubeconfig(env.kubernetesDir)
	data, err := os.ReadFile(filepath.Join(env.kubernetesDir, "scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(approver), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(approver, data, 0o600); err != nil {
		t.Fatal(err)
	}
	env.now = func() time.Time { return certsTestNow().Add(200 * 24 * time.Hour) }
	out, code := runCerts(t, env, "renew", "all", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "certificate embedded in the kubeconfig file for the kubelet serving certificate approver renewed\n") {
		t.Fatalf("code %d:\n%s", code, out)
	}
	cert, err := pki.ReadKubeconfigClientCert(approver)
	if err != nil || !cert.NotAfter.Equal(env.now().Add(365*24*time.Hour)) {
		t.Errorf("the approver's kubeconfig: %v %v", cert, err)
	}
	if fi, err := os.Stat(pki.CertPath(cfg.CertificatesDir, "apiserver")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the renewed apiserver.crt: %v %v", fi.Mode(), err)
	}
	// Renewing one certificate leaves the approver's kubeconfig alone.
	before, _ := os.ReadFile(approver)
	if out, code := runCerts(t, env, "renew", "apiserver", "--config", cfgPath); code != 0 || strings.Contains(out, "approver") {
		t.Errorf("code %d:\n%s", code, out)
	}
	if after, _ := os.ReadFile(approver); !bytes.Equal(before, after) {
		t.Error("renewing apiserver renewed the approver's kubeconfig")
	}
	// check-expiration lists it.
	if out, code := runCerts(t, env, "check-expiration", "--config", cfgPath); code != 0 || !strings.Contains(out, "\nkubelet-serving-approver.conf ") {
		t.Errorf("check-expiration: code %d:\n%s", code, out)
	}
}
