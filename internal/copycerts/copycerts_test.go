package copycerts

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// upstreamKey is the certificate key upstream kubeadm v1.36.3 printed when
// it uploaded testdata/upstream-*.sealed (the "ca.crt" and "sa.pub"
// entries of its kubeadm-certs Secret, base64 as the API shows them) from
// the files testdata/upstream-ca.crt and testdata/upstream-sa.pub. A test
// key of a throw-away cluster.
const upstreamKey = "400992b732b379fddd91581710fb764a3434ef2069467bb2f05b1769759af525"

const (
	testKey  = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	otherKey = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func mustKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestDecryptUpstreamSecret(t *testing.T) {
	for _, name := range []string{"ca.crt", "sa.pub"} {
		t.Run(name, func(t *testing.T) {
			sealed64, err := os.ReadFile(filepath.Join("testdata", "upstream-"+name+".sealed"))
			if err != nil {
				t.Fatal(err)
			}
			sealed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sealed64)))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "upstream-"+name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decrypt(sealed, mustKey(t, upstreamKey))
			if err != nil {
				t.Fatalf("Decrypt: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decrypted %s differs from the uploaded file", name)
			}
			// nonce (12) + plaintext + tag (16), as upstream lays it out
			if len(sealed) != 12+len(want)+16 {
				t.Errorf("sealed length %d, want %d", len(sealed), 12+len(want)+16)
			}
			if _, err := Decrypt(sealed, mustKey(t, otherKey)); !errors.Is(err, ErrDecrypt) {
				t.Errorf("Decrypt with another key: %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestEncryptDecrypt(t *testing.T) {
	key := mustKey(t, testKey)
	plain := []byte("-----BEGIN CERTIFICATE-----\nexample\n-----END CERTIFICATE-----\n")
	a, err := Encrypt(plain, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encrypt(plain, key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Error("two encryptions of the same data are equal; the nonce must be random")
	}
	got, err := Decrypt(a, key)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Decrypt(Encrypt(x)) = %q, %v", got, err)
	}
	tampered := append([]byte{}, a...)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name string
		data []byte
		key  []byte
	}{
		{"wrong key", a, mustKey(t, otherKey)},
		{"tampered", tampered, key},
		{"too short", a[:20], key},
		{"empty", nil, key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decrypt(tt.data, tt.key); !errors.Is(err, ErrDecrypt) {
				t.Errorf("Decrypt: %v, want ErrDecrypt", err)
			}
		})
	}
	if _, err := Encrypt(plain, key[:16]); err == nil {
		t.Error("Encrypt with a 16-byte key succeeded; certificate keys are AES-256")
	}
}

func TestNewKey(t *testing.T) {
	a, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewKey()
	if len(a) != 64 || a == b {
		t.Errorf("NewKey() = %q, %q: want two different 64-character keys", a, b)
	}
	if _, err := ParseKey(a); err != nil {
		t.Errorf("ParseKey(NewKey()): %v", err)
	}
}

func TestParseKeyNeverShowsTheKey(t *testing.T) {
	for _, bad := range []string{
		"zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		"0011223344556677",
		testKey + "00",
	} {
		_, err := ParseKey(bad)
		if err == nil {
			t.Errorf("ParseKey(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), bad[:8]) {
			t.Errorf("ParseKey error %q shows the key", err)
		}
	}
}

func TestFiles(t *testing.T) {
	keys := func(files []File) []string {
		var k []string
		for _, f := range files {
			k = append(k, f.Key+"="+f.Path+":"+f.Mode.String())
		}
		return k
	}
	local := keys(Files("/pki", kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}}))
	wantLocal := []string{
		"ca.crt=/pki/ca.crt:-rw-r--r--", "ca.key=/pki/ca.key:-rw-------",
		"sa.key=/pki/sa.key:-rw-------", "sa.pub=/pki/sa.pub:-rw-------",
		"front-proxy-ca.crt=/pki/front-proxy-ca.crt:-rw-r--r--", "front-proxy-ca.key=/pki/front-proxy-ca.key:-rw-------",
		"etcd-ca.crt=/pki/etcd/ca.crt:-rw-r--r--", "etcd-ca.key=/pki/etcd/ca.key:-rw-------",
	}
	if !reflect.DeepEqual(local, wantLocal) {
		t.Errorf("local etcd files:\n%q\nwant\n%q", local, wantLocal)
	}
	ext := keys(Files("/pki", kubeadm.Etcd{External: &kubeadm.ExternalEtcd{
		CAFile: "/etcd/ca.pem", CertFile: "/etcd/client.pem", KeyFile: "/etcd/client-key.pem",
	}}))
	wantExt := append(append([]string{}, wantLocal[:6]...),
		"external-etcd-ca.crt=/etcd/ca.pem:-rw-r--r--", "external-etcd.crt=/etcd/client.pem:-rw-r--r--",
		"external-etcd.key=/etcd/client-key.pem:-rw-------")
	if !reflect.DeepEqual(ext, wantExt) {
		t.Errorf("external etcd files:\n%q\nwant\n%q", ext, wantExt)
	}
	// An external etcd without client certificates (plain HTTP) adds nothing.
	if got := Files("/pki", kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"http://e:2379"}}}); len(got) != 6 {
		t.Errorf("external etcd without TLS files: %d files, want 6", len(got))
	}
}

// writePKI writes a real shared PKI (small ECDSA keys, so the test stays
// fast) for every entry of Files(dir, local etcd) except those named in
// skip, and returns the list with the files' contents.
func writePKI(t *testing.T, skip ...string) ([]File, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := Files(dir, kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})
	all := testPKI(t)
	content := map[string][]byte{}
	for _, f := range files {
		if contains(skip, f.Key) {
			continue
		}
		b := all[f.Key]
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		content[f.Key] = b
	}
	return files, content
}

// testPKI returns PEM contents for every Secret entry of a local-etcd
// cluster: three self-signed CAs and the service-account key pair.
func testPKI(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, ca := range []struct{ entry, cn string }{{"ca", "kubernetes"}, {"front-proxy-ca", "front-proxy-ca"}, {"etcd-ca", "etcd-ca"}} {
		crt, key := testCA(t, ca.cn, true)
		out[ca.entry+".crt"], out[ca.entry+".key"] = crt, key
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	out["sa.key"] = keyPEM(t, k)
	pub, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	out["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	return out
}

// testCA makes a self-signed certificate named cn, a CA when ca is true,
// and returns it and its key as PEM.
func testCA(t *testing.T, cn string, ca bool) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             testNow.Add(-time.Hour),
		NotAfter:              testNow.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  ca,
	}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM(t, k)
}

func keyPEM(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var testNow = time.Date(2026, 11, 22, 2, 17, 9, 0, time.UTC)

func tokens(ids ...string) func() (string, error) {
	return func() (string, error) {
		id := ids[0]
		ids = ids[1:]
		return id + ".0123456789abcdef", nil
	}
}

// fakeClient is a fake clientset that gives created objects a UID, as the
// API server does.
func fakeClient() *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*corev1.Secret)
		if s.UID == "" {
			s.UID = types.UID("uid-" + s.Name)
		}
		return false, nil, nil
	})
	return c
}

func TestUpload(t *testing.T) {
	files, content := writePKI(t, "sa.pub")
	c := fakeClient()
	ctx := context.Background()
	opts := UploadOptions{Files: files, Key: testKey, Now: testNow, NewToken: tokens("aaaaaa", "bbbbbb")}
	if err := Upload(ctx, c, opts); err != nil {
		t.Fatal(err)
	}

	owner, err := c.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-aaaaaa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOwner := map[string]string{
		"token-id":     "aaaaaa",
		"token-secret": "0123456789abcdef",
		"expiration":   "2026-11-22T04:17:09Z",
		"description":  "Proxy for managing TTL for the kubeadm-certs secret",
	}
	if owner.Type != bootstrapapi.SecretTypeBootstrapToken || !reflect.DeepEqual(stringData(owner), wantOwner) {
		t.Errorf("owner token: type %q, data %q; want %q, %q", owner.Type, stringData(owner), bootstrapapi.SecretTypeBootstrapToken, wantOwner)
	}

	s, err := c.CoreV1().Secrets("kube-system").Get(ctx, SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	wantRef := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "bootstrap-token-aaaaaa", UID: "uid-bootstrap-token-aaaaaa", Controller: &yes, BlockOwnerDeletion: &yes}}
	if !reflect.DeepEqual(s.OwnerReferences, wantRef) || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret owner %+v type %q, want %+v Opaque", s.OwnerReferences, s.Type, wantRef)
	}
	if len(s.Data) != len(files) {
		t.Errorf("Secret has %d entries, want %d", len(s.Data), len(files))
	}
	if v, ok := s.Data["sa.pub"]; !ok || len(v) != 0 {
		t.Errorf("entry of the missing sa.pub = %q (present %v), want an empty entry", v, ok)
	}
	plain, err := Open(s, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range content {
		if !bytes.Equal(plain[k], want) {
			t.Errorf("entry %s decrypts to %q, want %q", k, plain[k], want)
		}
	}
	if _, err := Open(s, otherKey); !errors.Is(err, ErrDecrypt) {
		t.Errorf("Open with another key: %v, want ErrDecrypt", err)
	}

	role, err := c.RbacV1().Roles("kube-system").Get(ctx, RoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRole, wantBinding := RBAC()
	if !reflect.DeepEqual(role.Rules, wantRole.Rules) {
		t.Errorf("Role rules %+v, want %+v", role.Rules, wantRole.Rules)
	}
	binding, err := c.RbacV1().RoleBindings("kube-system").Get(ctx, RoleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(binding.Subjects, wantBinding.Subjects) || binding.RoleRef != wantBinding.RoleRef {
		t.Errorf("RoleBinding %+v %+v", binding.RoleRef, binding.Subjects)
	}
	if want := []rbacSubject{{"Group", "system:bootstrappers:kubeadm:default-node-token"}}; !reflect.DeepEqual(subjects(binding.Subjects), want) {
		t.Errorf("RoleBinding subjects %v, want %v", subjects(binding.Subjects), want)
	}

	// Again: a new owner token, the Secret replaced and owned by it.
	if err := Upload(ctx, c, opts); err != nil {
		t.Fatalf("second Upload: %v", err)
	}
	s, err = c.CoreV1().Secrets("kube-system").Get(ctx, SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.OwnerReferences[0].Name != "bootstrap-token-bbbbbb" {
		t.Errorf("after a second upload the owner is %s, want the new token", s.OwnerReferences[0].Name)
	}
	if plain2, err := Open(s, testKey); err != nil || !reflect.DeepEqual(plain2, plain) {
		t.Errorf("after a second upload the content differs: %v", err)
	}
}

type rbacSubject struct{ Kind, Name string }

func subjects(list []rbacv1.Subject) []rbacSubject {
	var out []rbacSubject
	for _, s := range list {
		out = append(out, rbacSubject{s.Kind, s.Name})
	}
	return out
}

func stringData(s *corev1.Secret) map[string]string {
	m := map[string]string{}
	for k, v := range s.Data {
		m[k] = string(v)
	}
	return m
}

func TestUploadRefusals(t *testing.T) {
	tests := []struct {
		name    string
		skip    []string
		key     string
		wantErr string
	}{
		{"external CA", []string{"ca.key"}, testKey, "external CA"},
		{"external front-proxy CA", []string{"front-proxy-ca.key"}, testKey, "external CA"},
		{"malformed key", nil, "abc", "not hexadecimal"},
		{"short key", nil, "0011", "must be 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, _ := writePKI(t, tt.skip...)
			c := fakeClient()
			err := Upload(context.Background(), c, UploadOptions{Files: files, Key: tt.key, Now: testNow, NewToken: tokens("aaaaaa")})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Upload: %v, want an error containing %q", err, tt.wantErr)
			}
			if n := len(c.Actions()); n != 0 {
				t.Errorf("Upload made %d API calls before failing, want none: %v", n, c.Actions())
			}
		})
	}
}

func TestUploadAPIErrors(t *testing.T) {
	for _, step := range []struct{ verb, resource, name, wantErr string }{
		{"create", "secrets", "bootstrap-token-aaaaaa", "creating the owner token of Secret kube-system/kubeadm-certs"},
		{"create", "secrets", SecretName, "storing Secret kube-system/kubeadm-certs"},
		{"create", "roles", RoleName, "storing Role kube-system/kubeadm:kubeadm-certs"},
		{"create", "rolebindings", RoleName, "storing RoleBinding kube-system/kubeadm:kubeadm-certs"},
	} {
		t.Run(step.resource+"/"+step.name, func(t *testing.T) {
			files, _ := writePKI(t)
			c := fakeClient()
			c.PrependReactor(step.verb, step.resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
				obj := a.(clienttesting.CreateAction).GetObject().(metav1.Object)
				if obj.GetName() != step.name {
					return false, nil, nil
				}
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: step.resource}, step.name, errors.New("test refusal"))
			})
			err := Upload(context.Background(), c, UploadOptions{Files: files, Key: testKey, Now: testNow, NewToken: tokens("aaaaaa")})
			if err == nil || !strings.Contains(err.Error(), step.wantErr) || !apierrors.IsForbidden(err) {
				t.Errorf("Upload: %v, want a Forbidden error containing %q", err, step.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("error shows the certificate key: %v", err)
			}
		})
	}
}

func TestDownload(t *testing.T) {
	files, content := writePKI(t)
	c := fakeClient()
	ctx := context.Background()
	if err := Upload(ctx, c, UploadOptions{Files: files, Key: testKey, Now: testNow, NewToken: tokens("aaaaaa")}); err != nil {
		t.Fatal(err)
	}
	target := Files(filepath.Join(t.TempDir(), "pki"), kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})

	// A wrong key fails and writes nothing.
	err := Download(ctx, c, DownloadOptions{Files: target, Key: otherKey})
	if !errors.Is(err, ErrDecrypt) {
		t.Errorf("Download with a wrong key: %v, want ErrDecrypt", err)
	}
	if err != nil && strings.Contains(err.Error(), otherKey) {
		t.Errorf("error shows the key: %v", err)
	}
	for _, f := range target {
		if _, err := os.Stat(f.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a failed download", f.Path)
		}
	}

	for round := 1; round <= 2; round++ {
		if err := Download(ctx, c, DownloadOptions{Files: target, Key: testKey, TrustedCA: content["ca.crt"]}); err != nil {
			t.Fatalf("Download round %d: %v", round, err)
		}
		for _, f := range target {
			b, err := os.ReadFile(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, content[f.Key]) {
				t.Errorf("%s = %q, want %q", f.Path, b, content[f.Key])
			}
			fi, _ := os.Stat(f.Path)
			if fi.Mode().Perm() != f.Mode {
				t.Errorf("%s mode %v, want %v", f.Path, fi.Mode().Perm(), f.Mode)
			}
		}
	}

	// No Secret: a message that says what to do.
	if err := c.CoreV1().Secrets("kube-system").Delete(ctx, SecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Download(ctx, c, DownloadOptions{Files: target, Key: testKey}); err == nil || !strings.Contains(err.Error(), "upload-certs --upload-certs") {
		t.Errorf("Download without the Secret: %v", err)
	}
}

// sealedSecret is a kubeadm-certs Secret holding entries sealed with
// testKey; an empty entry stays empty, as Upload stores a missing file.
func sealedSecret(t *testing.T, entries map[string][]byte) *corev1.Secret {
	t.Helper()
	data := map[string][]byte{}
	for k, v := range entries {
		if len(v) == 0 {
			data[k] = []byte{}
			continue
		}
		sealed, err := Encrypt(v, mustKey(t, testKey))
		if err != nil {
			t.Fatal(err)
		}
		data[k] = sealed
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: "kube-system"}, Data: data}
}

// An external CA's keys are empty entries: the other files are written,
// those are left alone.
func TestDownloadExternalCA(t *testing.T) {
	entries := testPKI(t)
	entries["ca.key"], entries["front-proxy-ca.key"] = nil, nil
	c := fakeClient()
	if _, err := c.CoreV1().Secrets("kube-system").Create(context.Background(), sealedSecret(t, entries), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := Files(t.TempDir(), kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})
	if err := Download(context.Background(), c, DownloadOptions{Files: target, Key: testKey, TrustedCA: entries["ca.crt"]}); err != nil {
		t.Fatal(err)
	}
	for _, f := range target {
		_, err := os.Stat(f.Path)
		if empty := len(entries[f.Key]) == 0; empty != errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: stat %v, entry empty %v", f.Path, err, empty)
		}
	}
}

// Issue 29: a Secret with a missing, swapped or corrupt entry is refused,
// naming the entry, before anything is written.
func TestDownloadRefusals(t *testing.T) {
	other, _ := testCA(t, "another", true)
	leaf, leafKey := testCA(t, "not-a-ca", false)
	tests := []struct {
		name string
		// change alters the entries of a good Secret.
		change  func(e map[string][]byte)
		sealed  func(data map[string][]byte) // alters the sealed data
		trusted func(e map[string][]byte) []byte
		want    []string
	}{
		{name: "missing entry", change: func(e map[string][]byte) { delete(e, "etcd-ca.key") },
			want: []string{`entry "etcd-ca.key"`, "is missing"}},
		{name: "swapped CA keys", change: func(e map[string][]byte) { e["ca.key"], e["front-proxy-ca.key"] = e["front-proxy-ca.key"], e["ca.key"] },
			want: []string{`entry "ca.key" is not the private key of "ca.crt"`, `entry "front-proxy-ca.key" is not the private key of "front-proxy-ca.crt"`}},
		{name: "swapped service-account key", change: func(e map[string][]byte) { e["sa.key"] = e["etcd-ca.key"] },
			want: []string{`entry "sa.key" is not the private key of "sa.pub"`}},
		{name: "corrupt: does not parse", change: func(e map[string][]byte) { e["front-proxy-ca.crt"] = []byte("not a certificate\n") },
			want: []string{`entry "front-proxy-ca.crt" is not a PEM certificate`}},
		{name: "corrupt: a certificate under a key's name", change: func(e map[string][]byte) { e["etcd-ca.key"] = e["etcd-ca.crt"] },
			want: []string{`entry "etcd-ca.key" is not a PEM private key`}},
		{name: "corrupt: sa.pub is a certificate", change: func(e map[string][]byte) { e["sa.pub"] = e["ca.crt"] },
			want: []string{`entry "sa.pub" is not a PEM public key`}},
		{name: "corrupt: altered in the Secret", sealed: func(d map[string][]byte) { d["ca.key"][len(d["ca.key"])-1] ^= 1 },
			want: []string{`"ca.key"`, "does not decrypt"}},
		{name: "key without its certificate", change: func(e map[string][]byte) { e["ca.crt"] = nil },
			want: []string{`entry "ca.key" holds a private key but "ca.crt"`}},
		{name: "a leaf certificate as a CA", change: func(e map[string][]byte) { e["etcd-ca.crt"], e["etcd-ca.key"] = leaf, leafKey },
			want: []string{`entry "etcd-ca.crt" is not a CA certificate`}},
		{name: "CA pairs swapped whole", change: func(e map[string][]byte) {
			e["ca.crt"], e["front-proxy-ca.crt"] = e["front-proxy-ca.crt"], e["ca.crt"]
			e["ca.key"], e["front-proxy-ca.key"] = e["front-proxy-ca.key"], e["ca.key"]
		}, trusted: func(e map[string][]byte) []byte { return e["front-proxy-ca.crt"] }, // the original ca.crt
			want: []string{`entry "ca.crt" is not the cluster CA this node trusts`}},
		{name: "another cluster's CA", trusted: func(map[string][]byte) []byte { return other },
			want: []string{`entry "ca.crt" is not the cluster CA this node trusts`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := testPKI(t)
			trusted := append(append([]byte{}, other...), entries["ca.crt"]...) // a bundle, as during a CA rotation
			if tt.change != nil {
				tt.change(entries)
			}
			if tt.trusted != nil {
				trusted = tt.trusted(entries)
			}
			secret := sealedSecret(t, entries)
			if tt.sealed != nil {
				tt.sealed(secret.Data)
			}
			c := fakeClient()
			if _, err := c.CoreV1().Secrets("kube-system").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			target := Files(filepath.Join(dir, "pki"), kubeadm.Etcd{Local: &kubeadm.LocalEtcd{}})
			err := Download(context.Background(), c, DownloadOptions{Files: target, Key: testKey, TrustedCA: trusted})
			if err == nil {
				t.Fatal("Download accepted the Secret")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error shows secret material: %v", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("a refused download wrote %v", left)
			}
		})
	}
}
