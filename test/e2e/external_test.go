package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestExternalCA is kubeadm's external-CA workflow on a real node: the
// owner of the cluster CA makes every certificate and kubeconfig file and
// keeps the CA's key away; init then uses what it finds, writes no
// certificate, and runs a controller manager that signs nothing.
func TestExternalCA(t *testing.T) {
	n, cfg := singleNode(t, "e2ex")
	ignore := ignoreFindings()
	mustRun(t, n, "kubeadm", "init", "phase", "certs", "all", "--config", cfg)
	mustRun(t, n, "kubeadm", "init", "phase", "kubeconfig", "all", "--config", cfg)
	caKey := n.HostPath("/etc/kubernetes/pki/ca.key")
	if err := os.Remove(caKey); err != nil {
		t.Fatal(err)
	}
	pki := treeDigest(t, n.HostPath("/etc/kubernetes/pki"))

	t.Run("--upload-certs is refused before anything is done", func(t *testing.T) {
		r := run(t, n, "kubeadm", "init", "--config", cfg, ignore, "--upload-certs")
		if r.Code != 1 || !strings.Contains(r.Stderr, "--upload-certs cannot be used with an external CA") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if entries, _ := os.ReadDir(n.HostPath("/etc/kubernetes/manifests")); len(entries) > 0 {
			t.Errorf("the refused init wrote manifests: %v", entries)
		}
		if _, err := os.Stat(n.HostPath("/var/lib/kubelet/config.yaml")); !os.IsNotExist(err) {
			t.Errorf("the refused init wrote the kubelet's configuration: %v", err)
		}
	})

	r := run(t, n, "kubeadm", "init", "--config", cfg, ignore)
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, line := range []string{
		"[certs] Using existing ca keyless certificate authority",
		"[certs] Using existing apiserver certificate and key on disk",
		"[kubeconfig] External CA mode: Using user provided kubelet.conf",
	} {
		if !strings.Contains(r.Stdout, line) {
			t.Errorf("init did not say %q:\n%s", line, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "Generating") {
		t.Errorf("init generated a certificate or key:\n%s", r.Stdout)
	}
	if _, err := os.Stat(caKey); !os.IsNotExist(err) {
		t.Errorf("ca.key is back: %v", err)
	}
	if d := diffDigests(pki, treeDigest(t, n.HostPath("/etc/kubernetes/pki"))); len(d) > 0 {
		t.Errorf("init changed the given certificates: %v", d)
	}
	kcm, err := os.ReadFile(n.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--cluster-signing-cert-file=\n", "--cluster-signing-key-file=\n"} {
		if !strings.Contains(string(kcm), flag) {
			t.Errorf("the controller manager's manifest lacks the empty %s", strings.TrimSpace(flag))
		}
	}
	nodeReady(t, n, "node1", 90*time.Second)
	for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		eventually(t, 60*time.Second, comp+" Running", func() error {
			return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "pod", comp+"-node1", "-o", "jsonpath={.status.phase}"), "Running")
		})
	}

	t.Run("renewal of what the CA signs is declined", func(t *testing.T) {
		before := treeDigest(t, n.HostPath("/etc/kubernetes/pki"))
		r := run(t, n, "kubeadm", "certs", "renew", "apiserver")
		if r.Code != 0 || !strings.Contains(r.Stdout, "cannot be renewed") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if d := diffDigests(before, treeDigest(t, n.HostPath("/etc/kubernetes/pki"))); len(d) > 0 {
			t.Errorf("renew changed files: %v", d)
		}
	})

	if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
		t.Fatalf("reset: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestExternalEtcd is kubeadm's external-etcd workflow on a real node: an
// etcd that kubeadm does not run (started by hand inside the node) holds
// the cluster's data; init makes no etcd files or manifest and points the
// API server at it; reset leaves it and its data alone.
func TestExternalEtcd(t *testing.T) {
	tc := requireToolchain(t)
	c := newCluster(t, "e2ee")
	c.Programs["etcd"] = tc.UpstreamBinary("etcd")
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2")
	if err != nil {
		t.Fatal(err)
	}
	n, n2 := nodes[0], nodes[1]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	endpoint := "https://" + n.Addr().String() + ":2379"
	const pki = "/etc/kubernetes/pki"
	// etcd's own files, made as for a local etcd.
	local := filepath.Join(n.Dir, "local.yaml")
	if err := os.WriteFile(local, []byte(testbed.InitConfig(n, testbed.KubernetesVersion, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cert := range []string{"etcd-ca", "etcd-server", "apiserver-etcd-client"} {
		mustRun(t, n, "kubeadm", "init", "phase", "certs", cert, "--config", local)
	}
	// etcd and the test's etcdctl use copies (reset empties the node's
	// certificate folder, and etcd reads its files at every connection).
	own := t.TempDir()
	for _, f := range []string{"etcd/ca.crt", "etcd/server.crt", "etcd/server.key", "apiserver-etcd-client.crt", "apiserver-etcd-client.key"} {
		b, err := os.ReadFile(n.HostPath(pki + "/" + f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(own, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcd := n.Command(ctx, "etcd", "--name", "external", "--data-dir", filepath.Join(own, "data"),
		"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "external=http://127.0.0.1:2380",
		"--cert-file", own+"/server.crt", "--key-file", own+"/server.key",
		"--trusted-ca-file", own+"/ca.crt", "--client-cert-auth")
	etcdLog, err := os.Create(filepath.Join(n.LogDir(), "external-etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer etcdLog.Close()
	etcd.Stdout, etcd.Stderr = etcdLog, etcdLog
	if err := etcd.Start(); err != nil {
		t.Fatal(err)
	}
	// The node's end (its PID namespace) ends etcd too; this is for a
	// test that stops early.
	t.Cleanup(func() { _ = etcd.Process.Kill(); _ = etcd.Wait() })
	etcdctl := func(args ...string) result {
		return run(t, n, "etcdctl", append([]string{"--endpoints", endpoint, "--cacert", own + "/ca.crt",
			"--cert", own + "/apiserver-etcd-client.crt", "--key", own + "/apiserver-etcd-client.key"}, args...)...)
	}
	eventually(t, 30*time.Second, "external etcd healthy", func() error {
		if r := etcdctl("endpoint", "health"); r.Code != 0 {
			return fmt.Errorf("etcdctl endpoint health: exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
		}
		return nil
	})

	cfg := filepath.Join(n.Dir, "kubeadm.yaml")
	external := strings.Replace(testbed.InitConfig(n, testbed.KubernetesVersion, ""), "networking:", `etcd:
  external:
    endpoints: [`+endpoint+`]
    caFile: `+pki+`/etcd/ca.crt
    certFile: `+pki+`/apiserver-etcd-client.crt
    keyFile: `+pki+`/apiserver-etcd-client.key
networking:`, 1)
	if err := os.WriteFile(cfg, []byte(external), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, n, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "[certs] External etcd mode: Skipping etcd/ca certificate authority generation") {
		t.Errorf("init did not say it skipped the etcd CA:\n%s", r.Stdout)
	}
	if _, err := os.Stat(n.HostPath("/etc/kubernetes/manifests/etcd.yaml")); !os.IsNotExist(err) {
		t.Errorf("init wrote a local etcd manifest: %v", err)
	}
	apiserver, err := os.ReadFile(n.HostPath("/etc/kubernetes/manifests/kube-apiserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(apiserver), "--etcd-servers="+endpoint+"\n") {
		t.Errorf("the API server is not pointed at %s", endpoint)
	}
	nodeReady(t, n, "node1", 90*time.Second)
	if got := kubectl(t, n, "get", "--raw", "/readyz/etcd"); got != "ok" {
		t.Errorf("/readyz/etcd: %q", got)
	}
	const key = "/registry/configmaps/kube-system/kubeadm-config"
	if r := etcdctl("get", key, "--keys-only"); r.Code != 0 || !strings.Contains(r.Stdout, key) {
		t.Fatalf("the cluster's data is not in the external etcd: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	t.Run("a control-plane node joins with the external etcd's files", func(t *testing.T) {
		// The kubeadm-certs Secret carries the external etcd's client
		// files instead of an etcd CA; the new node gets no etcd member.
		jc := parseJoinCommand(t, r.Stdout)
		j := run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n2.Addr().String(), ignoreFindings())
		if j.Code != 0 {
			t.Fatalf("control-plane join: exit %d\n%s\n%s", j.Code, j.Stdout, j.Stderr)
		}
		for _, f := range []string{"/etcd/ca.crt", "/apiserver-etcd-client.crt", "/apiserver-etcd-client.key"} {
			if _, err := os.Stat(n2.HostPath(pki + f)); err != nil {
				t.Errorf("the external etcd's file %s is not on node2: %v", f, err)
			}
		}
		for _, f := range []string{"/etcd/ca.key", "/etcd/server.crt"} {
			if _, err := os.Stat(n2.HostPath(pki + f)); !os.IsNotExist(err) {
				t.Errorf("node2 has %s, a local etcd's file: %v", f, err)
			}
		}
		if _, err := os.Stat(n2.HostPath("/etc/kubernetes/manifests/etcd.yaml")); !os.IsNotExist(err) {
			t.Errorf("the join wrote a local etcd manifest: %v", err)
		}
		// node2's own API server serves from the external etcd.
		got := mustRun(t, n2, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "--server=https://"+n2.Addr().String()+":6443",
			"get", "--raw", "/readyz/etcd")
		if got != "ok" {
			t.Errorf("node2's /readyz/etcd: %q", got)
		}
		if r := etcdctl("member", "list"); r.Code != 0 || strings.Count(strings.TrimSpace(r.Stdout), "\n") != 0 {
			t.Errorf("the join changed the external etcd's members: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("reset leaves the external etcd alone", func(t *testing.T) {
		if r := run(t, n2, "kubeadm", "reset", "--force"); r.Code != 0 {
			t.Fatalf("reset of node2: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r := run(t, n, "kubeadm", "reset", "--force")
		if r.Code != 0 {
			t.Fatalf("reset: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout, "external etcd, which must be reset by hand") {
			t.Errorf("reset did not say the external etcd is left alone:\n%s", r.Stdout)
		}
		if r := etcdctl("get", key, "--keys-only"); r.Code != 0 || !strings.Contains(r.Stdout, key) {
			t.Errorf("the external etcd lost the cluster's data: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := etcdctl("member", "list"); r.Code != 0 || strings.Count(strings.TrimSpace(r.Stdout), "\n") != 0 {
			t.Errorf("the external etcd's members changed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}
