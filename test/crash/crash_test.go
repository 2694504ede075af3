package crash

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// kubeadm is our binary, built by TestMain ("" under -short).
var kubeadm string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kubeadm-crash")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kubeadm = filepath.Join(dir, "kubeadm")
	cmd := exec.Command("go", "build", "-o", kubeadm, "./cmd/kubeadm")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kubeadm: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Flags of every command here: no configuration file, nothing looked up
// online, everything written below the test's folder.
func certsArgs(root string) []string {
	return []string{"init", "phase", "certs", "all", "--cert-dir", filepath.Join(root, "pki"),
		"--apiserver-advertise-address", "192.0.2.10", "--kubernetes-version", "v1.37.2"}
}

func kubeconfigArgs(root string) []string {
	return []string{"init", "phase", "kubeconfig", "all", "--cert-dir", filepath.Join(root, "pki"),
		"--kubeconfig-dir", root, "--node-name", "crash-node",
		"--apiserver-advertise-address", "192.0.2.10", "--kubernetes-version", "v1.37.2"}
}

// killAfter starts kubeadm with args and kills it after d (unless it ended
// first).
func killAfter(t *testing.T, d time.Duration, args []string) {
	t.Helper()
	cmd := exec.Command(kubeadm, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("kubeadm %s failed before it was killed: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// copyTree copies the files below src into dst, modes kept.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for _, rel := range files(t, src) {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func runOK(t *testing.T, args []string) {
	t.Helper()
	out, err := exec.Command(kubeadm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm %s after the kill: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// files lists the files below root, relative to it.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// killPoints are the delays after which a run is killed: every step from
// the process's start to past the end of the phase (about 0.35 s for the
// certificates on two cores; their files are all written near the end,
// once the keys are made), so some kills land between two writes.
func killPoints(until, step time.Duration) []time.Duration {
	var out []time.Duration
	for d := time.Duration(0); d <= until; d += step {
		out = append(out, d)
	}
	return out
}

// TestCertsConvergeAfterKill: "init phase certs all" killed at any point,
// then run again, leaves the whole certificate tree, each certificate
// matching its key and signed by its CA, and no temporary file.
func TestCertsConvergeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubeadm and runs it dozens of times")
	}
	for _, d := range killPoints(450*time.Millisecond, 15*time.Millisecond) {
		t.Run(d.String(), func(t *testing.T) {
			root := t.TempDir()
			killAfter(t, d, certsArgs(root))
			t.Logf("after the kill: %v", files(t, root))
			runOK(t, certsArgs(root))
			checkCerts(t, filepath.Join(root, "pki"))
		})
	}
}

// TestKubeconfigsConvergeAfterKill: the same for "init phase kubeconfig
// all", on top of a complete certificate tree.
func TestKubeconfigsConvergeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kubeadm and runs it dozens of times")
	}
	certs := t.TempDir()
	runOK(t, certsArgs(certs))
	for _, d := range killPoints(300*time.Millisecond, 12*time.Millisecond) {
		t.Run(d.String(), func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join(certs, "pki"), filepath.Join(root, "pki"))
			killAfter(t, d, kubeconfigArgs(root))
			t.Logf("after the kill: %v", files(t, root))
			runOK(t, kubeconfigArgs(root))
			checkCerts(t, filepath.Join(root, "pki"))
			checkKubeconfigs(t, root)
		})
	}
}

// pairs maps each certificate of the tree (without extension) to its CA.
var pairs = map[string]string{
	"ca":                       "ca",
	"apiserver":                "ca",
	"apiserver-kubelet-client": "ca",
	"front-proxy-ca":           "front-proxy-ca",
	"front-proxy-client":       "front-proxy-ca",
	"etcd/ca":                  "etcd/ca",
	"etcd/server":              "etcd/ca",
	"etcd/peer":                "etcd/ca",
	"etcd/healthcheck-client":  "etcd/ca",
	"apiserver-etcd-client":    "etcd/ca",
}

func checkCerts(t *testing.T, dir string) {
	t.Helper()
	var want []string
	for name := range pairs {
		want = append(want, name+".crt", name+".key")
	}
	want = append(want, "sa.key", "sa.pub")
	slices.Sort(want)
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files in %s:\n%v\nwant:\n%v", dir, got, want)
	}
	certs := map[string]*x509.Certificate{}
	for name := range pairs {
		kp, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if certs[name], err = x509.ParseCertificate(kp.Certificate[0]); err != nil {
			t.Fatal(err)
		}
	}
	for name, ca := range pairs {
		if err := certs[name].CheckSignatureFrom(certs[ca]); err != nil {
			t.Errorf("%s is not signed by %s: %v", name, ca, err)
		}
	}
	key := readPEM(t, filepath.Join(dir, "sa.key"))
	pub := readPEM(t, filepath.Join(dir, "sa.pub"))
	priv, err := x509.ParsePKCS1PrivateKey(key)
	if err != nil {
		t.Fatalf("sa.key: %v", err)
	}
	p, err := x509.ParsePKIXPublicKey(pub)
	if err != nil {
		t.Fatalf("sa.pub: %v", err)
	}
	if !priv.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(p) {
		t.Error("sa.pub is not the public half of sa.key")
	}
}

func readPEM(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	return block.Bytes
}

func checkKubeconfigs(t *testing.T, root string) {
	t.Helper()
	want := []string{"admin.conf", "controller-manager.conf", "kubelet.conf", "scheduler.conf", "super-admin.conf"}
	var got []string
	for _, f := range files(t, root) {
		if !strings.HasPrefix(f, "pki/") {
			got = append(got, f)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("kubeconfig files %v, want %v", got, want)
	}
	ca, err := tls.LoadX509KeyPair(filepath.Join(root, "pki", "ca.crt"), filepath.Join(root, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(ca.Certificate[0])
	for _, name := range want {
		cfg, err := clientcmd.LoadFromFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx := cfg.Contexts[cfg.CurrentContext]
		if ctx == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
			t.Fatalf("%s has no user for its current context", name)
		}
		user := cfg.AuthInfos[ctx.AuthInfo]
		kp, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
		if err != nil {
			t.Fatalf("%s: its client certificate and key: %v", name, err)
		}
		leaf, _ := x509.ParseCertificate(kp.Certificate[0])
		if err := leaf.CheckSignatureFrom(caCert); err != nil {
			t.Errorf("%s: its client certificate is not signed by the cluster CA: %v", name, err)
		}
	}
}
