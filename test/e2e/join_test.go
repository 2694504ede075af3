package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// joinCommand is what init printed for joining a node.
type joinCommand struct {
	endpoint, token, hash, certificateKey string
}

// parseJoinCommand takes the join command's parts from init's output.
func parseJoinCommand(t *testing.T, out string) joinCommand {
	t.Helper()
	m := regexp.MustCompile(`kubeadm join (\S+) --token (\S+) \\\s+--discovery-token-ca-cert-hash (sha256:[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no join command in init's output:\n%s", out)
	}
	jc := joinCommand{endpoint: m[1], token: m[2], hash: m[3]}
	if k := regexp.MustCompile(`--certificate-key ([0-9a-f]{64})`).FindStringSubmatch(out); k != nil {
		jc.certificateKey = k[1]
	}
	return jc
}

// ignoreFindings is the preflight flag for this machine's known findings.
func ignoreFindings() string {
	return "--ignore-preflight-errors=" + strings.Join(testbed.PreflightFindings, ",")
}

// leftovers lists the files a failed join left in the node's kubeadm,
// kubelet and etcd folders (folders themselves do not count); the tests
// start from empty ones.
func leftovers(t *testing.T, n *testbed.Node) []string {
	t.Helper()
	files := slices.Collect(maps.Keys(nodeFiles(t, n)))
	slices.Sort(files)
	return files
}

// TestJoin makes a cluster with our kubeadm init (certificates uploaded),
// joins a worker with the printed command, refuses joins that must fail
// without leaving anything behind, joins a node with a discovery file, and
// joins two more control-plane nodes at the same time.
func TestJoin(t *testing.T) {
	c := newCluster(t, "e2ej")
	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2", "node3", "node4", "node5")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3, n4, n5 := nodes[0], nodes[1], nodes[2], nodes[3], nodes[4]
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	// What the folders kubeadm and the kubelet touch hold before anything
	// ran: reset must bring them back to exactly this.
	before := map[string]map[string]string{}
	for _, n := range nodes {
		before[n.Name] = nodeFiles(t, n)
	}
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte(testbed.InitConfig(n1, testbed.KubernetesVersion, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	if jc.certificateKey == "" {
		t.Fatalf("init --upload-certs printed no certificate key:\n%s", r.Stdout)
	}

	t.Run("worker joins with the printed command", func(t *testing.T) {
		r := run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout, "\nThis node has joined the cluster:\n") {
			t.Errorf("the worker join did not print upstream's line:\n%s", r.Stdout)
		}
		t.Logf("worker join took %v", r.Took)
		nodeReady(t, n1, "node2", 90*time.Second)
		tokenID := strings.SplitN(jc.token, ".", 2)[0]
		csrs := kubectl(t, n1, "get", "csr", "-o", `jsonpath={range .items[*]}{.spec.username}{" "}{.status.conditions[0].type}{"\n"}{end}`)
		if !strings.Contains(csrs, "system:bootstrap:"+tokenID+" Approved") {
			t.Errorf("no approved CSR of the bootstrap token %s:\n%s", tokenID, csrs)
		}
		// The kubelet's client certificate was issued through that CSR:
		// signed by the cluster CA, for system:node:node2.
		pemData := mustRun(t, n2, "cat", "/var/lib/kubelet/pki/kubelet-client-current.pem")
		cert := firstCertificate(t, []byte(pemData))
		if cert.Subject.CommonName != "system:node:node2" {
			t.Errorf("kubelet client certificate for %q", cert.Subject.CommonName)
		}
		caPEM, err := os.ReadFile(n1.HostPath("/etc/kubernetes/pki/ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("the kubelet's client certificate does not verify against the cluster CA: %v", err)
		}
		if _, err := os.Stat(n2.HostPath("/etc/kubernetes/bootstrap-kubelet.conf")); err == nil {
			t.Errorf("bootstrap-kubelet.conf was left after the TLS bootstrap")
		}
		// A worker has no certificates to renew, so no renewal timer.
		if _, err := os.Stat(n2.HostPath("/etc/systemd/system/kubeadm-certs-renewal.timer")); !os.IsNotExist(err) && !otherKubeadm() {
			t.Errorf("the worker got the certificate renewal timer: %v", err)
		}
	})

	t.Run("wrong CA hash is refused at once", func(t *testing.T) {
		wrong := "sha256:" + strings.Repeat("ab", 32)
		r := run(t, n4, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", wrong, ignoreFindings())
		if r.Code == 0 || !strings.Contains(r.Stderr, "pin") {
			t.Fatalf("exit %d, want a failure naming the pins\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r.Took > 20*time.Second {
			t.Errorf("a wrong hash took %v to be refused", r.Took)
		}
		if l := leftovers(t, n4); len(l) > 0 {
			t.Errorf("a refused join left %v", l)
		}
	})

	t.Run("expired token is refused", func(t *testing.T) {
		tok := strings.TrimSpace(mustRun(t, n1, "kubeadm", "token", "create", "--ttl", "1s"))
		time.Sleep(2 * time.Second)
		joinCfg := filepath.Join(n4.Dir, "expired.yaml")
		writeFile(t, joinCfg, tokenJoinConfig(jc.endpoint, tok, jc.hash, "10s"))
		r := run(t, n4, "kubeadm", "join", "--config", joinCfg, ignoreFindings())
		if r.Code == 0 {
			t.Fatalf("join with an expired token succeeded:\n%s", r.Stdout)
		}
		if secret := strings.SplitN(tok, ".", 2)[1]; strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Errorf("the token secret appears in the output")
		}
		t.Logf("expired token refused after %v: %s", r.Took, lastLine(r.Stderr))
		if l := leftovers(t, n4); len(l) > 0 {
			t.Errorf("a refused join left %v", l)
		}
	})

	t.Run("wrong certificate key is refused", func(t *testing.T) {
		wrongKey := strings.Repeat("0f", 32)
		r := run(t, n4, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", wrongKey, ignoreFindings())
		if r.Code == 0 || !strings.Contains(r.Stderr, "decrypt") {
			t.Fatalf("exit %d, want a decryption failure\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if l := leftovers(t, n4); len(l) > 0 {
			t.Errorf("a refused join left %v", l)
		}
	})

	t.Run("control-plane join without certificates stops in preflight", func(t *testing.T) {
		r := run(t, n4, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", ignoreFindings())
		if r.Code == 0 || !strings.Contains(r.Stderr, "ca.key") {
			t.Fatalf("exit %d, want the missing shared files named\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if strings.Contains(r.Stdout, "Pulling") || !strings.Contains(r.Stderr, "phase preflight") {
			t.Errorf("the refusal came after preflight:\n%s%s", r.Stdout, r.Stderr)
		}
		if l := leftovers(t, n4); len(l) > 0 {
			t.Errorf("a refused join left %v", l)
		}
	})

	t.Run("tampered cluster-info is refused", func(t *testing.T) {
		// The controller manager's bootstrap signer would sign the
		// tampered content again at once: stop it meanwhile.
		manifest := n1.HostPath("/etc/kubernetes/manifests/kube-controller-manager.yaml")
		aside := n1.HostPath("/etc/kubernetes/kube-controller-manager.yaml.aside")
		if err := os.Rename(manifest, aside); err != nil {
			t.Fatal(err)
		}
		// Without its resourceVersion the saved object replaces whatever
		// is there at the end.
		original := filepath.Join(n1.Dir, "cluster-info.json")
		saved := kubectl(t, n1, "-n", "kube-public", "get", "configmap", "cluster-info", "-o", "json")
		saved = regexp.MustCompile(`(?m)^\s*"resourceVersion": "[0-9]+",\n`).ReplaceAllString(saved, "")
		writeFile(t, original, saved)
		defer func() {
			kubectl(t, n1, "replace", "-f", original)
			if err := os.Rename(aside, manifest); err != nil {
				t.Fatal(err)
			}
		}()
		eventually(t, 60*time.Second, "controller manager stopped", func() error {
			if r := run(t, n1, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "-n", "kube-system", "get", "pod", "kube-controller-manager-node1"); r.Code == 0 {
				return errors.New("its mirror Pod still exists")
			}
			return nil
		})
		data, err := os.ReadFile(original)
		if err != nil {
			t.Fatal(err)
		}
		tampered := strings.Replace(string(data), "server: https://"+jc.endpoint, "server: https://10.199.0.99:6443", 1)
		if tampered == string(data) {
			t.Fatalf("found no server line to tamper with in cluster-info")
		}
		tamperedPath := filepath.Join(n1.Dir, "cluster-info-tampered.json")
		writeFile(t, tamperedPath, tampered)
		kubectl(t, n1, "replace", "-f", tamperedPath)

		joinCfg := filepath.Join(n4.Dir, "tampered.yaml")
		writeFile(t, joinCfg, tokenJoinConfig(jc.endpoint, jc.token, jc.hash, "20s"))
		r := run(t, n4, "kubeadm", "join", "--config", joinCfg, ignoreFindings())
		if r.Code == 0 || !strings.Contains(r.Stderr, "signature") {
			t.Fatalf("exit %d, want a signature failure\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if l := leftovers(t, n4); len(l) > 0 {
			t.Errorf("a refused join left %v", l)
		}
	})

	t.Run("dry run changes nothing on the node", func(t *testing.T) {
		r := run(t, n4, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, "--dry-run", ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("join --dry-run: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		m := regexp.MustCompile(`files a real join writes are in (\S+)`).FindStringSubmatch(r.Stdout)
		if m == nil {
			t.Fatalf("the dry run did not say where its files are:\n%s", r.Stdout)
		}
		// As upstream's, the folder is /etc/kubernetes/tmp/kubeadm-join-dryrun…
		// on the node; nothing else is written.
		if !strings.HasPrefix(m[1], "/etc/kubernetes/tmp/kubeadm-join-dryrun") {
			t.Errorf("the dry-run folder is %s, want one in /etc/kubernetes/tmp as upstream's", m[1])
		}
		var written []string
		for _, f := range leftovers(t, n4) {
			if !strings.HasPrefix(f, m[1]+"/") {
				written = append(written, f)
			}
		}
		if len(written) > 0 {
			t.Errorf("a dry run wrote %v", written)
		}
		// One flat folder, as upstream's.
		for _, f := range []string{"bootstrap-kubelet.conf", "ca.crt", "config.yaml", "kubeadm-flags.env"} {
			if _, err := os.Stat(filepath.Join(n4.HostPath(m[1]), f)); err != nil {
				t.Errorf("the dry run did not write %s: %v", f, err)
			}
		}
		// Gone before the node really joins, as an administrator would
		// remove it: reset leaves /etc/kubernetes/tmp alone.
		if err := os.RemoveAll(n4.HostPath("/etc/kubernetes/tmp")); err != nil {
			t.Fatal(err)
		}
		// It shows what it would write, under the real paths, and keeps
		// the bootstrap kubeconfig (it holds the token) to itself.
		for _, want := range []string{
			"[dryrun] Would write file \"/var/lib/kubelet/config.yaml\" with content:\n",
			"[dryrun] Would write file \"/etc/kubernetes/bootstrap-kubelet.conf\" (not shown: it holds key material)\n",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the dry run did not print %q:\n%s", want, r.Stdout)
			}
		}
		if secret := strings.SplitN(jc.token, ".", 2); len(secret) == 2 && strings.Contains(r.Stdout+r.Stderr, secret[1]) {
			t.Error("the dry run printed the token's secret")
		}
		os.RemoveAll(m[1])
	})

	t.Run("discovery file", func(t *testing.T) {
		info := kubectl(t, n1, "-n", "kube-public", "get", "configmap", "cluster-info", "-o", "jsonpath={.data.kubeconfig}")
		file := filepath.Join(n4.Dir, "cluster-info.yaml")
		writeFile(t, file, info)
		r := run(t, n4, "kubeadm", "join", "--discovery-file", file, "--tls-bootstrap-token", jc.token, ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		nodeReady(t, n1, "node4", 90*time.Second)
	})

	joinArgs := func(n *testbed.Node) []string {
		return []string{"join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
			"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n.Addr().String(), ignoreFindings()}
	}
	t.Run("two control-plane nodes join at the same time", func(t *testing.T) {
		// etcd takes one learner at a time: the join that finds another
		// learner in the cluster waits for it to be promoted.
		type joined struct {
			r   result
			err error
		}
		other := make(chan joined, 1)
		go func() {
			// Not through run: it may stop the test, which only the
			// test's own goroutine may do.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := n5.Command(ctx, "kubeadm", joinArgs(n5)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			j := joined{r: result{Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				j.r.Code = ee.ExitCode()
			} else {
				j.err = err
			}
			other <- j
		}()
		r := run(t, n3, "kubeadm", joinArgs(n3)...)
		j := <-other
		if j.err != nil {
			t.Fatalf("running kubeadm join in node5: %v", j.err)
		}
		for name, r := range map[string]result{"node3": r, "node5": j.r} {
			if r.Code != 0 {
				t.Errorf("control-plane join of %s: exit %d\n%s\n%s", name, r.Code, r.Stdout, r.Stderr)
			} else if !strings.Contains(r.Stdout, "\nThis node has joined the cluster and a new control plane instance was created:\n") {
				t.Errorf("the control-plane join of %s did not print upstream's line:\n%s", name, r.Stdout)
			}
			t.Logf("control-plane join of %s took %v", name, r.Took)
		}
		if t.Failed() {
			t.FailNow()
		}
		// Every API server answers, each with the cluster's CA, and knows
		// both new control-plane nodes.
		for _, n := range []*testbed.Node{n1, n3, n5} {
			for _, node := range []string{"node3", "node5"} {
				got := mustRun(t, n3, "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "--server=https://"+n.Addr().String()+":6443",
					"get", "node", node, "-o", "jsonpath={.metadata.labels}")
				if !strings.Contains(got, "node-role.kubernetes.io/control-plane") {
					t.Errorf("%s labels through %s: %s", node, n.Name, got)
				}
			}
		}
		checkVoters(t, etcdMemberList(t, n3), 3)
		// Each control-plane node renews its certificates itself.
		for _, n := range []*testbed.Node{n3, n5} {
			if otherKubeadm() {
				break
			}
			if got := strings.TrimSpace(run(t, n, "systemctl", "is-enabled", "kubeadm-certs-renewal.timer").Stdout); got != "enabled" {
				t.Errorf("the renewal timer of %s: %q", n.Name, got)
			}
		}
	})

	t.Run("a control-plane node reset and joined again", func(t *testing.T) {
		// reset removes node5's etcd member, but its Node and mirror Pods
		// stay in the API until someone deletes them: the join must talk
		// to the members etcd lists, not to the Pods' stale endpoint. The
		// kubelet makes the mirror Pod some time after the join returns.
		eventually(t, 60*time.Second, "node5's etcd mirror Pod", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", "etcd-node5", "-o", "name"), "pod/etcd-node5")
		})
		mustRun(t, n5, "kubeadm", "reset", "--force")
		if members := etcdMemberList(t, n1); len(members) != 2 {
			t.Fatalf("etcd members after resetting node5: %v", members)
		}
		kubectl(t, n1, "-n", "kube-system", "get", "pod", "etcd-node5")
		// With its kubelet stopped, node5's Node stays Ready until the
		// node lifecycle controller's grace period (50 s) has passed, and
		// join refuses a Ready Node of its name, as upstream does. Mark
		// it as that controller would rather than wait.
		kubectl(t, n1, "patch", "node", "node5", "--subresource=status", "-p",
			`{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"the kubelet was stopped by kubeadm reset"}]}}`)
		r := run(t, n5, "kubeadm", joinArgs(n5)...)
		if r.Code != 0 {
			t.Fatalf("control-plane join of node5 again: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		t.Logf("the second control-plane join of node5 took %v", r.Took)
		checkVoters(t, etcdMemberList(t, n1), 3)
	})

	t.Run("reset every node, then init again", func(t *testing.T) {
		// What each reset printed goes with any failure about its node.
		said := map[string]string{}
		// The joined control-plane nodes first: their etcd members leave.
		said[n3.Name] = mustRun(t, n3, "kubeadm", "reset", "--force")
		said[n5.Name] = mustRun(t, n5, "kubeadm", "reset", "--force")
		if members := etcdMemberList(t, n1); len(members) != 1 {
			t.Errorf("etcd members after resetting node3 and node5: %v\nnode3's reset:\n%s\nnode5's reset:\n%s", members, said[n3.Name], said[n5.Name])
		}
		// A reset killed half-way, then run again, converges.
		mustRun(t, n2, "sh", "-c", "kubeadm reset --force >/dev/null 2>&1 & pid=$!; sleep 0.3; kill -9 $pid; wait; true")
		said[n2.Name] = mustRun(t, n2, "kubeadm", "reset", "--force")
		said[n4.Name] = mustRun(t, n4, "kubeadm", "reset", "--force", "--cleanup-network")
		said[n1.Name] = mustRun(t, n1, "kubeadm", "reset", "--force")
		for _, n := range nodes {
			var wrong []string
			if d := diffDigests(before[n.Name], nodeFiles(t, n)); len(d) > 0 {
				wrong = append(wrong, fmt.Sprintf("files differ from before init: %v", d))
			}
			if got := strings.TrimSpace(run(t, n, "systemctl", "is-active", "kubelet").Stdout); got == "active" {
				wrong = append(wrong, "the kubelet still runs after reset")
			}
			if got := strings.TrimSpace(mustRun(t, n, "ctr", "-n", "k8s.io", "-a", "/run/containerd/containerd.sock", "containers", "ls", "-q")); got != "" {
				wrong = append(wrong, "containers left after reset: "+got)
			}
			if len(wrong) > 0 {
				t.Errorf("%s: %s\nits reset printed:\n%s", n.Name, strings.Join(wrong, "; "), said[n.Name])
			}
		}
		// --cleanup-network removed node4's CNI configuration and KUBE- chains.
		if entries, _ := os.ReadDir(n4.HostPath("/etc/cni/net.d")); len(entries) != 0 {
			t.Errorf("node4's CNI configuration is left: %v", entries)
		}
		if rules := mustRun(t, n4, "iptables-save"); strings.Contains(rules, "KUBE-") {
			t.Errorf("node4 still has KUBE- chains:\n%s", rules)
		}
		// A reset node takes a new init.
		r := run(t, n1, "kubeadm", "init", "--config", cfg, ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("init after reset: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// nodeFiles maps the files (not folders) under a node's kubeadm, kubelet,
// etcd and systemd unit folders to digests of their content.
func nodeFiles(t *testing.T, n *testbed.Node) map[string]string {
	t.Helper()
	all := map[string]string{}
	for _, dir := range []string{"/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/etc/systemd/system"} {
		for p, digest := range treeDigest(t, n.HostPath(dir)) {
			if !strings.HasPrefix(digest, "d") {
				all[filepath.Join(dir, p)] = digest
			}
		}
	}
	return all
}

// tokenJoinConfig is a JoinConfiguration for token discovery with a
// discovery timeout shorter than the default five minutes.
func tokenJoinConfig(endpoint, token, hash, timeout string) string {
	return `apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: ` + endpoint + `
    token: ` + token + `
    caCertHashes: [` + hash + `]
timeouts:
  discovery: ` + timeout + `
`
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func firstCertificate(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			t.Fatalf("no certificate in PEM data")
		}
		if b.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
}

// checkVoters checks that etcd's members (as etcdMemberList gives them)
// are want and that none is still a learner.
func checkVoters(t *testing.T, members []string, want int) {
	t.Helper()
	if len(members) != want {
		t.Errorf("etcd members: %v, want %d", members, want)
	}
	for _, m := range members {
		if strings.HasSuffix(m, ",true") {
			t.Errorf("a member is still a learner: %s", m)
		}
	}
}

// etcdMemberList asks the etcd of node n for its members with etcdctl, as
// an administrator would, and returns "name,isLearner" lines.
func etcdMemberList(t *testing.T, n *testbed.Node) []string {
	t.Helper()
	return etcdMembersAt(t, n, "https://127.0.0.1:2379")
}

// etcdMembersAt is etcdMemberList through the given client URL of n's etcd.
func etcdMembersAt(t *testing.T, n *testbed.Node, endpoint string) []string {
	t.Helper()
	var members []string
	for _, line := range strings.Split(strings.TrimSpace(etcdctlMembers(t, n, endpoint)), "\n") {
		f := strings.Split(line, ", ")
		if len(f) >= 6 {
			members = append(members, f[2]+","+f[5])
		}
	}
	return members
}

// etcdctlMembers is etcdctl's "member list" through the given client URL
// of n's etcd, as etcdctl prints it: "id, status, name, peer URLs, client
// URLs, isLearner" lines.
func etcdctlMembers(t *testing.T, n *testbed.Node, endpoint string) string {
	t.Helper()
	return mustRun(t, n, "etcdctl", "--endpoints="+endpoint,
		"--cacert=/etc/kubernetes/pki/etcd/ca.crt",
		"--cert=/etc/kubernetes/pki/apiserver-etcd-client.crt",
		"--key=/etc/kubernetes/pki/apiserver-etcd-client.key",
		"member", "list", "-w", "simple")
}
