package earlykey

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// noFiles is a readFile for command lines that name no file.
func noFiles(name string) ([]byte, error) { return nil, os.ErrNotExist }

// noneExist is an exists for a node without keys.
func noneExist(string) bool { return false }

// TestNoKeyWhenAllThere: a re-run whose key files are all there makes no
// key ahead; one missing file, a folder given by flag, by the
// configuration or under --rootfs, and the key is made again.
func TestNoKeyWhenAllThere(t *testing.T) {
	var pkiFiles []string
	for _, f := range certKeyFiles {
		pkiFiles = append(pkiFiles, "/etc/kubernetes/pki/"+f)
	}
	var confFiles []string
	for _, f := range kubeconfigFiles {
		confFiles = append(confFiles, "/etc/kubernetes/"+f)
	}
	node := func(files ...string) func(string) bool {
		set := map[string]bool{}
		for _, f := range files {
			set[f] = true
		}
		return func(name string) bool { return set[name] }
	}
	all := node(append(pkiFiles, confFiles...)...)
	withoutSA := node(append(slices.DeleteFunc(slices.Clone(pkiFiles), func(f string) bool { return strings.HasSuffix(f, "/sa.key") }), confFiles...)...)
	onlyCA := node("/etc/kubernetes/pki/ca.key", "/etc/kubernetes/pki/ca.crt")
	elsewhere := node("/x/pki/apiserver.key", "/k/admin.conf", "/r/etc/kubernetes/pki/ca.key", "/c/pki/sa.key")
	configs := map[string]string{"/c.yaml": "certificatesDir: /c/pki\n", "/r/c.yaml": "certificatesDir: /etc/kubernetes/pki\n"}
	readFile := func(name string) ([]byte, error) {
		if s, ok := configs[name]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tc := range []struct {
		args   string
		exists func(string) bool
		want   int
	}{
		{"init", all, 0},
		{"init phase certs all", all, 0},
		{"init phase kubeconfig all", all, 0},
		{"init phase certs etcd-peer", all, 0},
		{"join 10.0.0.1:6443 --token x --control-plane", all, 0},
		{"kubeconfig user --client-name bob", all, 2048},
		{"certs generate-csr", all, 2048},
		{"init", withoutSA, 2048},
		{"init phase certs all", withoutSA, 2048},
		{"init phase certs sa", withoutSA, 2048},
		{"init phase certs apiserver", withoutSA, 0},
		{"init phase kubeconfig all", withoutSA, 0},
		// The cluster's CA given by the admin: every other key to make.
		{"init phase certs all", onlyCA, 2048},
		{"init phase certs ca", onlyCA, 0},
		{"init phase certs apiserver --cert-dir /x/pki", elsewhere, 0},
		{"init phase certs apiserver --cert-dir=/x/pki", elsewhere, 0},
		{"init phase certs apiserver", elsewhere, 2048},
		{"init phase kubeconfig admin --kubeconfig-dir /k", elsewhere, 0},
		{"init phase certs ca --rootfs /r", elsewhere, 0},
		{"init phase certs sa --config /c.yaml", elsewhere, 0},
		{"init phase certs ca --rootfs /r --config /c.yaml", elsewhere, 0},
		{"init phase certs unknown-phase", all, 2048},
	} {
		if got := rsaBits(strings.Fields(tc.args), readFile, tc.exists); got != tc.want {
			t.Errorf("rsaBits(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

func TestMakesKeys(t *testing.T) {
	for _, tc := range []struct {
		args string
		want bool
	}{
		{"init", true},
		{"init --config /c.yaml", true},
		{"init --dry-run", true},
		{"init phase certs all --config /c.yaml --rootfs /tmp/x", true},
		{"init phase certs ca", true},
		{"init phase kubeconfig all", true},
		{"init phase etcd local", false},
		{"init phase control-plane all", false},
		{"init phase preflight", false},
		{"init --help", false},
		{"init phase certs all -h", false},
		{"join 10.0.0.1:6443 --token x --control-plane", true},
		{"join 10.0.0.1:6443 --token x --control-plane=true", true},
		{"join 10.0.0.1:6443 --token x", false},
		{"kubeconfig user --client-name bob", true},
		{"certs generate-csr --kubeconfig-dir /x", true},
		{"certs renew all", false},
		{"certs check-expiration", false},
		{"version", false},
		{"token create", false},
		{"reset -f", false},
		{"", false},
	} {
		var args []string
		if tc.args != "" {
			args = strings.Fields(tc.args)
		}
		want := 0
		if tc.want {
			want = 2048
		}
		if got := rsaBits(args, noFiles, noneExist); got != want {
			t.Errorf("rsaBits(%q) = %d, want %d", tc.args, got, want)
		}
	}
}

// TestRSABitsReadsConfig: the key made ahead has the size the
// configuration asks for, and none is made for ECDSA; the file is looked
// for under --rootfs, and one that cannot be read leaves kubeadm's default.
func TestRSABitsReadsConfig(t *testing.T) {
	files := map[string]string{
		"/c/rsa.yaml":     "kind: ClusterConfiguration\nencryptionAlgorithm: RSA-2048\n",
		"/c/none.yaml":    "kind: ClusterConfiguration\n",
		"/c/ecdsa.yaml":   "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P256 # small keys\n",
		"/c/rsa4096.yaml": "encryptionAlgorithm: \"RSA-4096\"\n",
		"/c/rsa3072.yaml": "encryptionAlgorithm: 'RSA-3072'\n",
		"/c/json.json":    `{"kind": "ClusterConfiguration", "encryptionAlgorithm": "ECDSA-P384"}`,
		"/c/comment.yaml": "# encryptionAlgorithm: ECDSA-P256\nkind: ClusterConfiguration\n",
		"/c/gate.yaml":    "apiVersion: kubeadm.k8s.io/v1beta3\nfeatureGates:\n  PublicKeysECDSA: true\n",
		"/c/gateoff.yaml": "featureGates:\n  PublicKeysECDSA: false\n",
		"/root/c.yaml":    "encryptionAlgorithm: ECDSA-P256\n",
	}
	readFile := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("no such file")
	}
	for _, tc := range []struct {
		args string
		want int
	}{
		{"init --config /c/rsa.yaml", 2048},
		{"init --config=/c/none.yaml", 2048},
		{"init --config /c/ecdsa.yaml", 0},
		{"init phase certs all --config=/c/ecdsa.yaml", 0},
		{"init phase kubeconfig all --config /c/rsa4096.yaml", 4096},
		{"init --config /c/rsa3072.yaml", 3072},
		{"init --config /c/json.json", 0},
		{"init --config /c/comment.yaml", 2048},
		{"init --config /c/gate.yaml", 0},
		{"init --config /c/gateoff.yaml", 2048},
		{"init --config /c.yaml --rootfs /root", 0},
		{"init --rootfs=/root --config c.yaml", 0},
		{"init --config /c/missing.yaml", 2048},
		{"init phase etcd local --config /c/rsa.yaml", 0},
		{"kubeconfig user --client-name bob --config /c/rsa4096.yaml", 4096},
	} {
		if got := rsaBits(strings.Fields(tc.args), readFile, noneExist); got != tc.want {
			t.Errorf("rsaBits(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

// TestTakeWithoutKey: in a test binary no key is started at init, and
// Take says so at once.
func TestTakeWithoutKey(t *testing.T) {
	if k, ok := Take(2048); ok || k != nil {
		t.Errorf("Take = %v, %v; want none", k, ok)
	}
}

// TestReadRegularFile: a configuration given as a pipe or a device is not
// read (that would take its contents from the command, or block); a
// regular file is.
func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(regular, []byte("encryptionAlgorithm: RSA-3072\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readRegularFile(regular); err != nil || !strings.Contains(string(b), "RSA-3072") {
		t.Errorf("readRegularFile(regular) = %q, %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A read of the FIFO would block for ever: it has no writer.
	if _, err := readRegularFile(fifo); err == nil {
		t.Error("readRegularFile(fifo) read it")
	}
	if _, err := readRegularFile("/dev/null"); err == nil {
		t.Error("readRegularFile(/dev/null) read it")
	}
	if _, err := readRegularFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("readRegularFile(missing) gave no error")
	}
}

// TestTakeBySize: a key begun for one size is not handed out for another,
// and is still there for its own.
func TestTakeBySize(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := make(chan crypto.Signer, 1)
	c <- key
	close(c)
	mu.Lock()
	pending, pendingBits = c, 3072
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		pending, pendingBits = nil, 0
		mu.Unlock()
	})

	if k, ok := Take(2048); ok || k != nil {
		t.Errorf("Take(2048) = %v, %v; want none", k, ok)
	}
	if k, ok := Take(3072); !ok || k != key {
		t.Errorf("Take(3072) = %v, %v; want the pending key", k, ok)
	}
	if k, ok := Take(3072); ok || k != nil {
		t.Errorf("second Take(3072) = %v, %v; want none", k, ok)
	}
}
