package e2e

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestCISHardening makes a cluster with the CISHardening feature gate (a
// control-plane node made by init, a worker and a second control-plane
// node joined to it) and checks that
// it works as any other (Ready nodes, the control plane and the addons
// running, cluster-info signed, CoreDNS available, upstream's e2e_kubeadm
// suite when built), that the API server talks to the kubelets through
// serving certificates the cluster CA signed and kubeadm's approver
// approved (kubectl logs and exec to a Pod on the worker), that every CIS
// benchmark item of cisItems passes on both nodes except the deliberate
// exceptions docs/cis-hardening.md lists, and that reset removes what the
// profile made.
func TestCISHardening(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the CISHardening feature gate is this kubeadm's own")
	}
	documented := documentedExceptions(t)
	// First the test bed, which skips the test where there is none (go
	// test -short on this machine while another run's cluster uses the
	// etcd user must not remove it).
	c := newCluster(t, "e2ecis")
	// The etcd user goes into this machine's /etc/passwd (the nodes share
	// it): whatever happens, the host keeps no account of the test.
	if _, err := rootless.RemoveAccount("/etc", cis.EtcdUser, cis.EtcdUserComment); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = rootless.RemoveAccount("/etc", cis.EtcdUser, cis.EtcdUserComment) })

	ctx := context.Background()
	nodes, err := c.Up(ctx, "node1", "node2", "node3")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	controlPlanes := []*testbed.Node{n1, n3}
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(n1.Dir, "cis.yaml")
	writeFile(t, cfg, editInitConfig(t, n1, [][2]string{{"kind: ClusterConfiguration\n", "kind: ClusterConfiguration\nfeatureGates:\n  CISHardening: true\n"}}))

	t.Run("dry run shows the profile", func(t *testing.T) {
		r := run(t, n1, "kubeadm", "init", "--config", cfg, "--dry-run", ignoreFindings())
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		for _, want := range []string{
			`Would make sure the user and group "etcd" exist`,
			`Would write file "/etc/kubernetes/audit-policy.yaml", unless it exists`,
			`Would write file "/etc/kubernetes/manifests/kubeadm-kubelet-serving-approver.yaml" with content:`,
			"- --profiling=false", "- --kubelet-certificate-authority=/etc/kubernetes/pki/ca.crt",
			"serverTLSBootstrap: true",
		} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the dry run does not show %q", want)
			}
		}
		// Only its own folder, /etc/kubernetes/tmp/kubeadm-init-dryrun…, as
		// upstream's; removed afterwards, as an administrator would.
		entries, _ := os.ReadDir(n1.HostPath("/etc/kubernetes"))
		if len(entries) != 1 || entries[0].Name() != "tmp" {
			t.Errorf("the dry run wrote into /etc/kubernetes: %v", entries)
		}
		dry, _ := os.ReadDir(n1.HostPath("/etc/kubernetes/tmp"))
		if len(dry) != 1 || !strings.HasPrefix(dry[0].Name(), "kubeadm-init-dryrun") {
			t.Errorf("the dry run wrote into /etc/kubernetes/tmp: %v", dry)
		}
		if err := os.RemoveAll(n1.HostPath("/etc/kubernetes/tmp")); err != nil {
			t.Fatal(err)
		}
	})

	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	t.Logf("kubeadm init took %v", r.Took)
	jc := parseJoinCommand(t, r.Stdout)
	token := strings.SplitN(jc.token, ".", 2)[0]
	r = run(t, n2, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm join: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = run(t, n3, "kubeadm", "join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash,
		"--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n3.Addr().String(), ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm join --control-plane: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 90*time.Second)
	}

	t.Run("cluster", func(t *testing.T) {
		for _, n := range controlPlanes {
			for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubeadm-kubelet-serving-approver"} {
				eventually(t, 60*time.Second, comp+" Running on "+n.Name, func() error {
					return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", comp+"-"+n.Name, "-o", "jsonpath={.status.phase}"), "Running")
				})
			}
		}
		kubectl(t, n1, "-n", "kube-system", "get", "deployment/coredns", "service/kube-dns", "configmap/coredns",
			"daemonset/kube-proxy", "configmap/kube-proxy", "configmap/kubeadm-config", "configmap/kubelet-config")
		eventually(t, 30*time.Second, "cluster-info signed", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-public", "get", "configmap", "cluster-info",
				"-o", "jsonpath={.data.jws-kubeconfig-"+token+"}"), "nonempty")
		})
		eventually(t, 120*time.Second, "coredns available", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.availableReplicas}"), "2")
		})
		// etcd runs as the etcd user kubeadm made.
		ids, ok, err := rootless.LookupAccount("/etc", cis.EtcdUser)
		if err != nil || !ok {
			t.Fatalf("the etcd user: %v, %v", ok, err)
		}
		eventually(t, 30*time.Second, "etcd running as "+cis.EtcdUser, func() error {
			uids, err := processUIDs("etcd")
			if err != nil {
				return err
			}
			if !slices.Contains(uids, ids.UID) || slices.Contains(uids, 0) {
				return fmt.Errorf("etcd runs as %v, want %d", uids, ids.UID)
			}
			return nil
		})
		if got := kubectl(t, n1, "-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}"); !strings.Contains(got, "CISHardening: true") {
			t.Errorf("the gate is not stored with the cluster's configuration:\n%s", got)
		}
	})

	t.Run("kubelet serving certificates", func(t *testing.T) {
		caPEM, err := os.ReadFile(n1.HostPath("/etc/kubernetes/pki/ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		for _, n := range nodes {
			eventually(t, 90*time.Second, "serving certificate of "+n.Name, func() error {
				out := kubectlTry(t, n1, "get", "csr", "-o", `jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.spec.username}{" "}{.status.conditions[0].reason}{" "}{.status.certificate}{"\n"}{end}`)
				if out.err != nil {
					return out.err
				}
				for _, line := range strings.Split(out.out, "\n") {
					if f := strings.Fields(line); len(f) == 3 && f[0] == "system:node:"+n.Name && f[1] == "KubeadmKubeletServingApproved" {
						return nil
					}
				}
				return fmt.Errorf("no issued serving certificate approved by kubeadm:\n%s", out.out)
			})
			// The kubelet serves with it: signed by the cluster CA, for
			// the node's name and address.
			data := mustRun(t, n, "cat", "/var/lib/kubelet/pki/kubelet-server-current.pem")
			cert := firstCertificate(t, []byte(data))
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: n.Name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("%s's serving certificate: %v", n.Name, err)
			}
			if err := cert.VerifyHostname(n.Addr().String()); err != nil {
				t.Errorf("%s's serving certificate: %v", n.Name, err)
			}
		}
		// The API server reaches the worker's kubelet, verifying it with
		// --kubelet-certificate-authority: logs and exec work.
		logsAndExecOnWorker(t, n1)
		// The approver refuses a request its checks fail: one that a user
		// other than a node makes (admin.conf) stays pending.
		refusedCSR(t, n1)
	})

	t.Run("audit log", func(t *testing.T) {
		kubectl(t, n1, "-n", "default", "create", "configmap", "cis-audit-probe", "--from-literal=k=v")
		kubectl(t, n1, "-n", "default", "create", "secret", "generic", "cis-audit-secret", "--from-literal=password=s3cr3t-value")
		path := n1.HostPath(cis.AuditLogFile())
		eventually(t, 30*time.Second, "the audit log records the probe", func() error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(data), `"name":"cis-audit-probe"`) || !strings.Contains(string(data), `"name":"cis-audit-secret"`) {
				return fmt.Errorf("%s lacks the probe's events", path)
			}
			if strings.Contains(string(data), "czNjcjN0LXZhbHVl") || strings.Contains(string(data), "s3cr3t-value") {
				return fmt.Errorf("%s holds a Secret's data", path)
			}
			return nil
		})
		if _, mode, _ := stat(t, path); mode&^0o600 != 0 {
			t.Errorf("%s has mode %v", path, mode)
		}
	})

	t.Run("the approver may do its job and no more", func(t *testing.T) {
		// SubjectAccessReviews, as the API server answers them: kubectl's
		// "auth can-i" knows no "signers" resource.
		const certs = "certificates.k8s.io"
		for _, c := range []struct {
			verb, group, resource, subresource, name string
			want                                     bool
		}{
			{"approve", certs, "signers", "", "kubernetes.io/kubelet-serving", true},
			{"update", certs, "certificatesigningrequests", "approval", "", true},
			{"watch", certs, "certificatesigningrequests", "", "", true},
			{"list", "", "nodes", "", "", true},
			{"approve", certs, "signers", "", "kubernetes.io/kube-apiserver-client", false},
			{"approve", certs, "signers", "", "kubernetes.io/kube-apiserver-client-kubelet", false},
			{"update", certs, "certificatesigningrequests", "status", "", false},
			{"create", certs, "certificatesigningrequests", "", "", false},
			{"get", "", "secrets", "", "", false},
			{"update", "", "nodes", "status", "", false},
		} {
			sar := fmt.Sprintf(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"kubeadm:kubelet-serving-approver","groups":["system:authenticated"],"resourceAttributes":{"verb":%q,"group":%q,"resource":%q,"subresource":%q,"name":%q}}}`,
				c.verb, c.group, c.resource, c.subresource, c.name)
			path := filepath.Join(t.TempDir(), "sar.json")
			writeFile(t, path, sar)
			got := kubectl(t, n1, "create", "-f", path, "-o", "jsonpath={.status.allowed}")
			if (got == "true") != c.want {
				t.Errorf("may the approver %s %s/%s %s %s? %q, want %v", c.verb, c.resource, c.subresource, c.group, c.name, got, c.want)
			}
		}
	})

	t.Run("upgrade keeps the profile", func(t *testing.T) {
		upgradeCfg := filepath.Join(n1.Dir, "upgrade.yaml")
		writeFile(t, upgradeCfg, upgradeConfiguration(""))
		r := runWithin(t, 5*time.Minute, n1, "kubeadm", "upgrade", "apply", testbed.KubernetesVersion, "--dry-run", "--config", upgradeCfg)
		if r.Code != 0 || !strings.Contains(r.Stdout, `manifest of "kubeadm-kubelet-serving-approver"`) {
			t.Errorf("upgrade apply --dry-run: exit %d, the approver's manifest not shown\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		before := treeDigest(t, n1.HostPath("/etc/kubernetes/manifests"))
		r = runWithin(t, 10*time.Minute, n1, "kubeadm", "upgrade", "apply", testbed.KubernetesVersion, "--yes", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if d := diffDigests(before, treeDigest(t, n1.HostPath("/etc/kubernetes/manifests"))); len(d) > 0 {
			t.Errorf("an upgrade to the same version changed the manifests: %v", d)
		}
		r = runWithin(t, 5*time.Minute, n2, "kubeadm", "upgrade", "node", "--config", upgradeCfg)
		if r.Code != 0 {
			t.Fatalf("upgrade node on node2: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		nodeReady(t, n1, "node2", 60*time.Second)
		eventually(t, 60*time.Second, "the approver Running after the upgrade", func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", "kubeadm-kubelet-serving-approver-node1", "-o", "jsonpath={.status.phase}"), "Running")
		})
	})

	t.Run("CA rotation", func(t *testing.T) {
		longTest(t, "8 minutes")
		rotateCISCluster(t, n1, n2, n3)
	})

	t.Run("CIS benchmark items", func(t *testing.T) {
		failed := cisFindings(t, controlPlanes, nodes)
		exceptions := cisExceptions()
		var ids []string
		for id := range exceptions {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if strings.Join(ids, " ") != strings.Join(documented, " ") {
			t.Errorf("docs/cis-hardening.md lists the exceptions %v; this test knows %v", documented, ids)
		}
		var passed, excepted, failedIDs []string
		for _, item := range cisItems() {
			problems := failed[item.id]
			if len(problems) == 0 {
				passed = append(passed, item.id)
			}
			if allowed, ok := exceptions[item.id]; ok {
				var left []string
				for _, p := range problems {
					if !allowed(p) {
						left = append(left, p)
					}
				}
				if len(problems) > 0 {
					excepted = append(excepted, fmt.Sprintf("%s(%d)", item.id, len(problems)))
				}
				problems = left
			}
			if len(problems) > 0 {
				failedIDs = append(failedIDs, item.id)
				t.Errorf("CIS %s %s:\n  %s", item.id, item.what, strings.Join(problems, "\n  "))
			}
		}
		t.Logf("%d CIS items checked on %d nodes; %d pass: %s", len(cisItems()), len(nodes), len(passed), strings.Join(passed, " "))
		t.Logf("failing as documented exceptions (findings): %s", strings.Join(excepted, " "))
		if len(failedIDs) > 0 {
			t.Logf("failing and not excepted: %s", strings.Join(failedIDs, " "))
		}
	})

	t.Run("e2e_kubeadm", func(t *testing.T) {
		bin := filepath.Join(requireToolchain(t).Upstream, "e2e_kubeadm.test")
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("upstream's e2e_kubeadm.test is not built (%v)", err)
		}
		r := runWithin(t, 10*time.Minute, n1, bin, "--kubeconfig=/etc/kubernetes/admin.conf", "--ginkgo.no-color")
		summary := regexp.MustCompile(`(?m)^(SUCCESS|FAIL)! .*$`).FindString(r.Stdout)
		t.Logf("e2e_kubeadm.test: exit %d, %s", r.Code, summary)
		if r.Code != 0 || !strings.HasPrefix(summary, "SUCCESS!") {
			t.Errorf("e2e_kubeadm.test failed (exit %d):\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("reset removes what the profile made", func(t *testing.T) {
		for _, n := range []*testbed.Node{n2, n3, n1} {
			if r := run(t, n, "kubeadm", "reset", "--force"); r.Code != 0 {
				t.Fatalf("reset of %s: exit %d\n%s%s", n.Name, r.Code, r.Stdout, r.Stderr)
			}
		}
		if made, err := rootless.MadeAccount("/etc", cis.EtcdUser, cis.EtcdUserComment); err != nil || made {
			t.Errorf("the etcd user is left (%v)", err)
		}
		for _, n := range controlPlanes {
			for _, p := range []string{cis.ApproverKubeconfig("/etc/kubernetes"), cis.AuditPolicyFile, cis.AdmissionConfigFile, cis.ApproverBinary, "/etc/kubernetes/manifests/kubeadm-kubelet-serving-approver.yaml"} {
				if _, err := os.Stat(n.HostPath(p)); !os.IsNotExist(err) {
					t.Errorf("%s of %s is left: %v", p, n.Name, err)
				}
			}
		}
	})
}

// TestCISDefaultCluster runs the CIS items of TestCISHardening on a
// cluster made without the gate: they must find what issue 29 reports of
// a default kubeadm cluster (and more), so that the check list is known
// to tell a hardened cluster from another.
func TestCISDefaultCluster(t *testing.T) {
	n, cfg := singleNode(t, "e2ecisd")
	if r := run(t, n, "kubeadm", "init", "--config", cfg, ignoreFindings()); r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	nodeReady(t, n, n.Name, 90*time.Second)
	failed := cisFindings(t, []*testbed.Node{n}, []*testbed.Node{n})
	var ids []string
	for id := range failed {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return cisLess(ids[i], ids[j]) })
	t.Logf("a default cluster fails %d items: %s", len(ids), strings.Join(ids, " "))
	// The API server without --profiling=false, audit logging and
	// --kubelet-certificate-authority; the controller manager and the
	// scheduler without --profiling=false, no GC threshold; etcd's folder
	// root's; certificates and the kubelet's config.yaml 0644.
	for _, id := range []string{"1.2.5", "1.2.15", "1.2.16", "1.2.17", "1.2.18", "1.2.19", "1.3.1", "1.3.2", "1.4.1", "1.1.12", "1.1.20", "4.1.9"} {
		if _, ok := failed[id]; !ok {
			t.Errorf("CIS %s passes on a default cluster: the check finds nothing", id)
		}
	}
}

// cisFindings runs every item of cisItems on each node (the control-plane
// items on the controlPlanes only) and returns the findings by item.
func cisFindings(t *testing.T, controlPlanes, nodes []*testbed.Node) map[string][]string {
	t.Helper()
	failed := map[string][]string{}
	for _, n := range nodes {
		e := newCISEnv(t, n, slices.Contains(controlPlanes, n))
		for _, item := range cisItems() {
			if item.controlPlane && !e.controlPlane {
				continue
			}
			for _, problem := range item.check(e) {
				failed[item.id] = append(failed[item.id], n.Name+": "+problem)
			}
		}
	}
	return failed
}

// cisLess orders item numbers numerically, part by part.
func cisLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// refusedCSR posts, as the cluster administrator, a kubelet serving
// request for node2 and checks that kubeadm's approver leaves it pending.
func refusedCSR(t *testing.T, n *testbed.Node) {
	t.Helper()
	if r := run(t, n, "openssl", "version"); r.Code != 0 {
		t.Log("no openssl on this machine: the refusals are left to the unit tests of package csrapprover")
		return
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "rogue-csr.sh")
	writeFile(t, script, `set -e
cd `+dir+`
openssl ecparam -name prime256v1 -genkey -noout -out rogue.key
openssl req -new -key rogue.key -subj "/O=system:nodes/CN=system:node:node2" -addext "subjectAltName=DNS:node2" -out rogue.csr
cat <<EOF | kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f -
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: cis-rogue-serving
spec:
  signerName: kubernetes.io/kubelet-serving
  usages: [digital signature, key encipherment, server auth]
  request: $(base64 -w0 rogue.csr)
EOF
`)
	mustRun(t, n, "sh", script)
	time.Sleep(5 * time.Second)
	if got := kubectl(t, n, "get", "csr", "cis-rogue-serving", "-o", "jsonpath={.status.conditions}"); got != "" {
		t.Errorf("the administrator's serving request for node2 was decided: %s", got)
	}
	kubectl(t, n, "delete", "csr", "cis-rogue-serving")
	t.Log("kubeadm's approver left the administrator's serving request for node2 pending")
}

// documentedExceptions reads the IDs of the deliberate exceptions table of
// docs/cis-hardening.md: its rows start with "| <id> |".
func documentedExceptions(t *testing.T) []string {
	t.Helper()
	repo, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(repo, "docs", "cis-hardening.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	in := false
	row := regexp.MustCompile(`^\| *([0-9]+(\.[0-9]+)+) *\|`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.Contains(line, "Deliberate exceptions")
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			ids = append(ids, m[1])
		}
	}
	sort.Strings(ids)
	return ids
}

// cisExceptions are the items docs/cis-hardening.md lists as left failing
// on purpose, each with which of its findings are expected; a finding it
// does not allow still fails the test.
func cisExceptions() map[string]func(finding string) bool {
	all := func(string) bool { return true }
	etcdFiles := regexp.MustCompile(`^node[0-9]+: /etc/kubernetes/pki/etcd/(ca\.crt|server\.crt|server\.key|peer\.crt|peer\.key) is etcd:etcd$`)
	return map[string]func(string) bool{
		"1.1.9": all, "1.1.10": all, // CNI files: the network add-on's
		"1.1.19": etcdFiles.MatchString, // etcd reads its own files as the etcd user
		"1.2.1":  all,                   // anonymous discovery and health probes
		"1.2.11": all,                   // AlwaysPullImages
		"1.2.20": all,                   // --request-timeout: a manual item without a test
		"1.2.27": all, "1.2.28": all,    // encryption at rest
		"4.1.1": all, "4.1.2": all, // the kubelet's service file is the package's
		"4.1.3": all, "4.1.4": all, // kube-proxy has no kubeconfig file on the node
		"4.2.9": all, // the kubelet's serving certificate is bootstrapped, not a file
	}
}

// cisEnv is what the checks of one node read: its component flags, the
// kubelet's configuration, and files by their path in the node.
type cisEnv struct {
	t            *testing.T
	n            *testbed.Node
	controlPlane bool
	flags        map[string]map[string]string // process name → flag → value
	present      map[string]bool              // process name → running
	kubelet      map[string]any
}

func newCISEnv(t *testing.T, n *testbed.Node, controlPlane bool) *cisEnv {
	t.Helper()
	e := &cisEnv{t: t, n: n, controlPlane: controlPlane, flags: map[string]map[string]string{}, present: map[string]bool{}}
	procs := []string{"kubelet"}
	if controlPlane {
		procs = append(procs, "kube-apiserver", "kube-controller", "kube-scheduler", "etcd")
	}
	for _, p := range procs {
		e.flags[p], e.present[p] = processFlags(t, n, p)
	}
	data, err := os.ReadFile(n.HostPath("/var/lib/kubelet/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &e.kubelet); err != nil {
		t.Fatal(err)
	}
	return e
}

// processFlags returns the "--name=value" flags of the process whose
// command name (as the kernel keeps it, 15 bytes) is comm, read inside
// the node; a flag without a value is "true".
func processFlags(t *testing.T, n *testbed.Node, comm string) (map[string]string, bool) {
	t.Helper()
	script := `for p in /proc/[0-9]*; do if [ "$(cat $p/comm 2>/dev/null)" = "` + comm + `" ]; then cat $p/cmdline; echo; break; fi; done`
	out := mustRun(t, n, "sh", "-c", script)
	line, _, _ := strings.Cut(out, "\n")
	flags := map[string]string{}
	if line == "" {
		return flags, false
	}
	for _, arg := range strings.Split(strings.TrimRight(line, "\x00"), "\x00") {
		name, ok := strings.CutPrefix(arg, "--")
		if !ok {
			continue
		}
		k, v, found := strings.Cut(name, "=")
		if !found {
			v = "true"
		}
		flags[k] = v
	}
	return flags, true
}

// stat returns a node file's owner ("user:group", by name as stat -c
// %U:%G shows it) and mode; missing is false when it does not exist.
func stat(t *testing.T, hostPath string) (owner string, mode os.FileMode, exists bool) {
	t.Helper()
	fi, err := os.Lstat(hostPath)
	if os.IsNotExist(err) {
		return "", 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return idName(t, "/etc/passwd", st.Uid) + ":" + idName(t, "/etc/group", st.Gid), fi.Mode().Perm(), true
}

// idName is the name of id in an account file, or the number.
func idName(t *testing.T, file string, id uint32) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[2] == strconv.FormatUint(uint64(id), 10) {
			return f[0]
		}
	}
	return strconv.FormatUint(uint64(id), 10)
}

// mode checks a node file's mode against a bitmask (kube-bench's
// "bitmask" compare: no permission bit outside mask); owner its owner.
func (e *cisEnv) mode(path string, mask os.FileMode) []string {
	_, mode, ok := stat(e.t, e.n.HostPath(path))
	if !ok {
		return []string{path + " is missing"}
	}
	if mode&^mask != 0 {
		return []string{fmt.Sprintf("%s has mode %o, not %o or stricter", path, mode, mask)}
	}
	return nil
}

// ifExists is check(path, mask) when path exists, else nothing.
func (e *cisEnv) ifExists(path string, check func(string, os.FileMode) []string, mask os.FileMode) []string {
	if _, _, ok := stat(e.t, e.n.HostPath(path)); !ok {
		return nil
	}
	return check(path, mask)
}

func (e *cisEnv) owner(path, want string) []string {
	owner, _, ok := stat(e.t, e.n.HostPath(path))
	if !ok {
		return []string{path + " is missing"}
	}
	if owner != want {
		return []string{fmt.Sprintf("%s is %s", path, owner)}
	}
	return nil
}

// files lists the regular files and folders under a node folder whose
// name matches suffix ("" for all), with the folder itself.
func (e *cisEnv) files(dir, suffix string) []string {
	var out []string
	root := e.n.HostPath(dir)
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if suffix == "" || strings.HasSuffix(p, suffix) {
			out = append(out, filepath.Join(dir, strings.TrimPrefix(p, root)))
		}
		return nil
	})
	return out
}

// flag is a component's flag: its value and whether it is set.
func (e *cisEnv) flag(proc, name string) (string, bool) {
	v, ok := e.flags[proc][name]
	return v, ok
}

func (e *cisEnv) running(proc string) []string {
	if !e.present[proc] {
		return []string{proc + " is not running"}
	}
	return nil
}

// flagIs wants the flag set to want.
func (e *cisEnv) flagIs(proc, name, want string) []string {
	if p := e.running(proc); p != nil {
		return p
	}
	if v, ok := e.flag(proc, name); !ok || v != want {
		return []string{fmt.Sprintf("%s --%s is %q (set: %v), want %q", proc, name, v, ok, want)}
	}
	return nil
}

// flagSet wants each flag set.
func (e *cisEnv) flagSet(proc string, names ...string) []string {
	if p := e.running(proc); p != nil {
		return p
	}
	var out []string
	for _, n := range names {
		if _, ok := e.flag(proc, n); !ok {
			out = append(out, fmt.Sprintf("%s --%s is not set", proc, n))
		}
	}
	return out
}

// flagUnsetOr wants the flag unset or equal to want.
func (e *cisEnv) flagUnsetOr(proc, name, want string) []string {
	if p := e.running(proc); p != nil {
		return p
	}
	if v, ok := e.flag(proc, name); ok && v != want {
		return []string{fmt.Sprintf("%s --%s is %q", proc, name, v)}
	}
	return nil
}

// listHas wants a comma-separated flag to hold item (or, with not, not to).
func (e *cisEnv) listHas(proc, name, item string, has bool) []string {
	if p := e.running(proc); p != nil {
		return p
	}
	v, _ := e.flag(proc, name)
	if slices.Contains(strings.Split(v, ","), item) != has {
		return []string{fmt.Sprintf("%s --%s is %q", proc, name, v)}
	}
	return nil
}

// flagAtLeast wants a numeric flag of at least min.
func (e *cisEnv) flagAtLeast(proc, name string, min int) []string {
	if p := e.running(proc); p != nil {
		return p
	}
	v, _ := e.flag(proc, name)
	if n, err := strconv.Atoi(v); err != nil || n < min {
		return []string{fmt.Sprintf("%s --%s is %q, want %d or more", proc, name, v, min)}
	}
	return nil
}

// validElements wants every element of a comma-separated value in valid.
func validElements(what, value string, valid []string) []string {
	if value == "" {
		return []string{what + " is not set"}
	}
	var out []string
	for _, v := range strings.Split(value, ",") {
		if !slices.Contains(valid, v) {
			out = append(out, fmt.Sprintf("%s holds %s", what, v))
		}
	}
	return out
}

// kubeletField is a field of the kubelet's config.yaml (a dotted path).
func (e *cisEnv) kubeletField(path string) (any, bool) {
	var cur any = e.kubelet
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// kubeletSetting checks a kubelet setting as kube-bench does: the flag
// when the kubelet has it, else the config file's field; ok says whether
// check accepts the value (set false when neither has it).
func (e *cisEnv) kubeletSetting(flag, field string, accept func(v string, set bool) bool) []string {
	if p := e.running("kubelet"); p != nil {
		return p
	}
	v, set := e.flag("kubelet", flag)
	if !set {
		var raw any
		if raw, set = e.kubeletField(field); set {
			v = fmt.Sprint(raw)
			if list, ok := raw.([]any); ok {
				parts := make([]string, len(list))
				for i, x := range list {
					parts[i] = fmt.Sprint(x)
				}
				v = strings.Join(parts, ",")
			}
		}
	}
	if !accept(v, set) {
		return []string{fmt.Sprintf("kubelet %s (%s) is %q (set: %v)", flag, field, v, set)}
	}
	return nil
}

// cisItem is one benchmark item: its number (as kube-bench's cis-1.12
// configuration numbers it), what it wants, and a check returning what
// fails on a node.
type cisItem struct {
	id, what     string
	controlPlane bool
	check        func(e *cisEnv) []string
}

const (
	apiserver = "kube-apiserver"
	kcm       = "kube-controller" // the kernel keeps 15 bytes of the name
	scheduler = "kube-scheduler"
	etcdProc  = "etcd"
)

// strongCiphers are the suites 1.2.29 accepts; kubeletCiphers those of
// 4.2.12.
var (
	strongCiphers  = strings.Split("TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", ",")
	kubeletCiphers = strings.Split("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", ",")
)

// cisItems are the control-plane (1.1 to 1.4), etcd (2) and worker node
// (4.1 to 4.3) items of the CIS Kubernetes Benchmark as kube-bench checks
// them on a kubeadm node, with kubeadm's paths; where benchmark versions
// differ, the stricter reading (certificates 0600, 1.1.20 of v1.10).
// Items that only describe a manual review carry no finding.
func cisItems() []cisItem {
	manifest := func(c string) string { return "/etc/kubernetes/manifests/" + c + ".yaml" }
	cp := func(id, what string, check func(e *cisEnv) []string) cisItem {
		return cisItem{id: id, what: what, controlPlane: true, check: check}
	}
	node := func(id, what string, check func(e *cisEnv) []string) cisItem {
		return cisItem{id: id, what: what, check: check}
	}
	always := func(reason string) func(*cisEnv) []string {
		return func(*cisEnv) []string { return []string{reason} }
	}
	etcdDataDir := func(e *cisEnv) string {
		if d, ok := e.flag(etcdProc, "data-dir"); ok {
			return d
		}
		return "/var/lib/etcd"
	}
	var items []cisItem
	for i, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		items = append(items,
			cp(fmt.Sprintf("1.1.%d", 2*i+1), c+" manifest mode 600", func(e *cisEnv) []string { return e.mode(manifest(c), 0o600) }),
			cp(fmt.Sprintf("1.1.%d", 2*i+2), c+" manifest root:root", func(e *cisEnv) []string { return e.owner(manifest(c), "root:root") }))
	}
	items = append(items,
		cp("1.1.9", "CNI files mode 600", func(e *cisEnv) []string {
			var out []string
			for _, f := range e.files("/etc/cni/net.d", ".conflist") {
				out = append(out, e.mode(f, 0o600)...)
			}
			return out
		}),
		cp("1.1.10", "CNI files root:root", func(e *cisEnv) []string {
			var out []string
			for _, f := range e.files("/etc/cni/net.d", ".conflist") {
				out = append(out, e.owner(f, "root:root")...)
			}
			return out
		}),
		cp("1.1.11", "etcd data folder mode 700", func(e *cisEnv) []string { return e.mode(etcdDataDir(e), 0o700) }),
		cp("1.1.12", "etcd data folder etcd:etcd", func(e *cisEnv) []string { return e.owner(etcdDataDir(e), "etcd:etcd") }),
		// super-admin.conf only where init made it ("if present").
		cp("1.1.13", "admin.conf and super-admin.conf mode 600", func(e *cisEnv) []string {
			return append(e.mode("/etc/kubernetes/admin.conf", 0o600), e.ifExists("/etc/kubernetes/super-admin.conf", e.mode, 0o600)...)
		}),
		cp("1.1.14", "admin.conf and super-admin.conf root:root", func(e *cisEnv) []string {
			out := e.owner("/etc/kubernetes/admin.conf", "root:root")
			if _, _, ok := stat(e.t, e.n.HostPath("/etc/kubernetes/super-admin.conf")); ok {
				out = append(out, e.owner("/etc/kubernetes/super-admin.conf", "root:root")...)
			}
			return out
		}),
		cp("1.1.15", "scheduler.conf mode 600", func(e *cisEnv) []string { return e.mode("/etc/kubernetes/scheduler.conf", 0o600) }),
		cp("1.1.16", "scheduler.conf root:root", func(e *cisEnv) []string { return e.owner("/etc/kubernetes/scheduler.conf", "root:root") }),
		cp("1.1.17", "controller-manager.conf mode 600", func(e *cisEnv) []string { return e.mode("/etc/kubernetes/controller-manager.conf", 0o600) }),
		cp("1.1.18", "controller-manager.conf root:root", func(e *cisEnv) []string { return e.owner("/etc/kubernetes/controller-manager.conf", "root:root") }),
		cp("1.1.19", "PKI folder and files root:root", func(e *cisEnv) []string {
			var out []string
			for _, f := range e.files("/etc/kubernetes/pki", "") {
				out = append(out, e.owner(f, "root:root")...)
			}
			return out
		}),
		cp("1.1.20", "PKI certificates mode 600", func(e *cisEnv) []string {
			var out []string
			for _, f := range e.files("/etc/kubernetes/pki", ".crt") {
				out = append(out, e.mode(f, 0o600)...)
			}
			return out
		}),
		cp("1.1.21", "PKI keys mode 600", func(e *cisEnv) []string {
			var out []string
			for _, f := range e.files("/etc/kubernetes/pki", ".key") {
				out = append(out, e.mode(f, 0o600)...)
			}
			return out
		}),

		cp("1.2.1", "--anonymous-auth=false", func(e *cisEnv) []string { return e.flagIs(apiserver, "anonymous-auth", "false") }),
		cp("1.2.2", "no --token-auth-file", func(e *cisEnv) []string {
			if _, ok := e.flag(apiserver, "token-auth-file"); ok {
				return []string{"--token-auth-file is set"}
			}
			return e.running(apiserver)
		}),
		cp("1.2.3", "DenyServiceExternalIPs", func(e *cisEnv) []string {
			return e.listHas(apiserver, "enable-admission-plugins", "DenyServiceExternalIPs", true)
		}),
		cp("1.2.4", "--kubelet-client-certificate and key", func(e *cisEnv) []string {
			return e.flagSet(apiserver, "kubelet-client-certificate", "kubelet-client-key")
		}),
		cp("1.2.5", "--kubelet-certificate-authority", func(e *cisEnv) []string { return e.flagSet(apiserver, "kubelet-certificate-authority") }),
		cp("1.2.6", "--authorization-mode not AlwaysAllow", func(e *cisEnv) []string {
			return e.listHas(apiserver, "authorization-mode", "AlwaysAllow", false)
		}),
		cp("1.2.7", "--authorization-mode has Node", func(e *cisEnv) []string { return e.listHas(apiserver, "authorization-mode", "Node", true) }),
		cp("1.2.8", "--authorization-mode has RBAC", func(e *cisEnv) []string { return e.listHas(apiserver, "authorization-mode", "RBAC", true) }),
		cp("1.2.9", "EventRateLimit", func(e *cisEnv) []string {
			return append(e.listHas(apiserver, "enable-admission-plugins", "EventRateLimit", true), e.flagSet(apiserver, "admission-control-config-file")...)
		}),
		cp("1.2.10", "no AlwaysAdmit", func(e *cisEnv) []string {
			return e.listHas(apiserver, "enable-admission-plugins", "AlwaysAdmit", false)
		}),
		cp("1.2.11", "AlwaysPullImages", func(e *cisEnv) []string {
			return e.listHas(apiserver, "enable-admission-plugins", "AlwaysPullImages", true)
		}),
		cp("1.2.12", "ServiceAccount not disabled", func(e *cisEnv) []string {
			return e.listHas(apiserver, "disable-admission-plugins", "ServiceAccount", false)
		}),
		cp("1.2.13", "NamespaceLifecycle not disabled", func(e *cisEnv) []string {
			return e.listHas(apiserver, "disable-admission-plugins", "NamespaceLifecycle", false)
		}),
		cp("1.2.14", "NodeRestriction", func(e *cisEnv) []string {
			return e.listHas(apiserver, "enable-admission-plugins", "NodeRestriction", true)
		}),
		cp("1.2.15", "--profiling=false", func(e *cisEnv) []string { return e.flagIs(apiserver, "profiling", "false") }),
		cp("1.2.16", "--audit-log-path", func(e *cisEnv) []string { return e.flagSet(apiserver, "audit-log-path") }),
		cp("1.2.17", "--audit-log-maxage >= 30", func(e *cisEnv) []string { return e.flagAtLeast(apiserver, "audit-log-maxage", 30) }),
		cp("1.2.18", "--audit-log-maxbackup >= 10", func(e *cisEnv) []string { return e.flagAtLeast(apiserver, "audit-log-maxbackup", 10) }),
		cp("1.2.19", "--audit-log-maxsize >= 100", func(e *cisEnv) []string { return e.flagAtLeast(apiserver, "audit-log-maxsize", 100) }),
		cp("1.2.20", "--request-timeout as appropriate (manual, no test)", always("a manual review: kubeadm keeps the default")),
		cp("1.2.21", "--service-account-lookup unset or true", func(e *cisEnv) []string {
			return e.flagUnsetOr(apiserver, "service-account-lookup", "true")
		}),
		cp("1.2.22", "--service-account-key-file", func(e *cisEnv) []string { return e.flagSet(apiserver, "service-account-key-file") }),
		cp("1.2.23", "--etcd-certfile and keyfile", func(e *cisEnv) []string { return e.flagSet(apiserver, "etcd-certfile", "etcd-keyfile") }),
		cp("1.2.24", "--tls-cert-file and key", func(e *cisEnv) []string {
			return e.flagSet(apiserver, "tls-cert-file", "tls-private-key-file")
		}),
		cp("1.2.25", "--client-ca-file", func(e *cisEnv) []string { return e.flagSet(apiserver, "client-ca-file") }),
		cp("1.2.26", "--etcd-cafile", func(e *cisEnv) []string { return e.flagSet(apiserver, "etcd-cafile") }),
		cp("1.2.27", "--encryption-provider-config", func(e *cisEnv) []string { return e.flagSet(apiserver, "encryption-provider-config") }),
		cp("1.2.28", "encryption providers", func(e *cisEnv) []string { return e.flagSet(apiserver, "encryption-provider-config") }),
		cp("1.2.29", "strong ciphers", func(e *cisEnv) []string {
			v, _ := e.flag(apiserver, "tls-cipher-suites")
			return append(e.running(apiserver), validElements("kube-apiserver --tls-cipher-suites", v, strongCiphers)...)
		}),
		cp("1.2.30", "--service-account-extend-token-expiration=false", func(e *cisEnv) []string {
			return e.flagIs(apiserver, "service-account-extend-token-expiration", "false")
		}),

		cp("1.3.1", "--terminated-pod-gc-threshold", func(e *cisEnv) []string { return e.flagSet(kcm, "terminated-pod-gc-threshold") }),
		cp("1.3.2", "controller manager --profiling=false", func(e *cisEnv) []string { return e.flagIs(kcm, "profiling", "false") }),
		cp("1.3.3", "--use-service-account-credentials", func(e *cisEnv) []string {
			if v, _ := e.flag(kcm, "use-service-account-credentials"); v == "false" {
				return []string{"--use-service-account-credentials=false"}
			}
			return e.running(kcm)
		}),
		cp("1.3.4", "--service-account-private-key-file", func(e *cisEnv) []string { return e.flagSet(kcm, "service-account-private-key-file") }),
		cp("1.3.5", "--root-ca-file", func(e *cisEnv) []string { return e.flagSet(kcm, "root-ca-file") }),
		cp("1.3.6", "RotateKubeletServerCertificate not off", func(e *cisEnv) []string {
			return e.listHas(kcm, "feature-gates", "RotateKubeletServerCertificate=false", false)
		}),
		cp("1.3.7", "controller manager --bind-address=127.0.0.1", func(e *cisEnv) []string {
			return e.flagUnsetOr(kcm, "bind-address", "127.0.0.1")
		}),
		cp("1.4.1", "scheduler --profiling=false", func(e *cisEnv) []string { return e.flagIs(scheduler, "profiling", "false") }),
		cp("1.4.2", "scheduler --bind-address=127.0.0.1", func(e *cisEnv) []string {
			return e.flagUnsetOr(scheduler, "bind-address", "127.0.0.1")
		}),

		cp("2.1", "etcd --cert-file and --key-file", func(e *cisEnv) []string { return e.flagSet(etcdProc, "cert-file", "key-file") }),
		cp("2.2", "etcd --client-cert-auth=true", func(e *cisEnv) []string { return e.flagIs(etcdProc, "client-cert-auth", "true") }),
		cp("2.3", "etcd --auto-tls not true", func(e *cisEnv) []string { return e.flagUnsetOr(etcdProc, "auto-tls", "false") }),
		cp("2.4", "etcd --peer-cert-file and --peer-key-file", func(e *cisEnv) []string {
			return e.flagSet(etcdProc, "peer-cert-file", "peer-key-file")
		}),
		cp("2.5", "etcd --peer-client-cert-auth=true", func(e *cisEnv) []string { return e.flagIs(etcdProc, "peer-client-cert-auth", "true") }),
		cp("2.6", "etcd --peer-auto-tls not true", func(e *cisEnv) []string { return e.flagUnsetOr(etcdProc, "peer-auto-tls", "false") }),
		cp("2.7", "etcd --trusted-ca-file", func(e *cisEnv) []string { return e.flagSet(etcdProc, "trusted-ca-file") }),

		node("4.1.1", "kubelet service file mode 600", always("kubeadm writes no kubelet service file")),
		node("4.1.2", "kubelet service file root:root", always("kubeadm writes no kubelet service file")),
		node("4.1.3", "kube-proxy kubeconfig file mode 600", always("kube-proxy's kubeconfig is in a ConfigMap")),
		node("4.1.4", "kube-proxy kubeconfig file root:root", always("kube-proxy's kubeconfig is in a ConfigMap")),
		node("4.1.5", "kubelet.conf mode 600", func(e *cisEnv) []string { return e.mode("/etc/kubernetes/kubelet.conf", 0o600) }),
		node("4.1.6", "kubelet.conf root:root", func(e *cisEnv) []string { return e.owner("/etc/kubernetes/kubelet.conf", "root:root") }),
		node("4.1.7", "kubelet client CA mode 644 (600 here)", func(e *cisEnv) []string { return e.mode("/etc/kubernetes/pki/ca.crt", 0o600) }),
		node("4.1.8", "kubelet client CA root:root", func(e *cisEnv) []string { return e.owner("/etc/kubernetes/pki/ca.crt", "root:root") }),
		node("4.1.9", "kubelet config.yaml mode 600", func(e *cisEnv) []string { return e.mode("/var/lib/kubelet/config.yaml", 0o600) }),
		node("4.1.10", "kubelet config.yaml root:root", func(e *cisEnv) []string { return e.owner("/var/lib/kubelet/config.yaml", "root:root") }),
		node("4.2.1", "kubelet anonymous auth off", func(e *cisEnv) []string {
			return e.kubeletSetting("anonymous-auth", "authentication.anonymous.enabled", func(v string, set bool) bool { return set && v == "false" })
		}),
		node("4.2.2", "kubelet authorization not AlwaysAllow", func(e *cisEnv) []string {
			return e.kubeletSetting("authorization-mode", "authorization.mode", func(v string, set bool) bool { return set && v != "AlwaysAllow" })
		}),
		node("4.2.3", "kubelet client CA", func(e *cisEnv) []string {
			return e.kubeletSetting("client-ca-file", "authentication.x509.clientCAFile", func(v string, set bool) bool { return set && v != "" })
		}),
		node("4.2.4", "kubelet read-only port 0", func(e *cisEnv) []string {
			return e.kubeletSetting("read-only-port", "readOnlyPort", func(v string, set bool) bool { return !set || v == "0" })
		}),
		node("4.2.5", "kubelet streaming idle timeout not 0", func(e *cisEnv) []string {
			return e.kubeletSetting("streaming-connection-idle-timeout", "streamingConnectionIdleTimeout", func(v string, set bool) bool { return !set || v != "0" })
		}),
		node("4.2.6", "kubelet makes iptables util chains", func(e *cisEnv) []string {
			return e.kubeletSetting("make-iptables-util-chains", "makeIPTablesUtilChains", func(v string, set bool) bool { return !set || v == "true" })
		}),
		node("4.2.7", "no --hostname-override", func(e *cisEnv) []string {
			if _, ok := e.flag("kubelet", "hostname-override"); ok {
				return []string{"the kubelet has --hostname-override"}
			}
			return e.running("kubelet")
		}),
		node("4.2.8", "kubelet eventRecordQPS", func(e *cisEnv) []string {
			return e.kubeletSetting("event-qps", "eventRecordQPS", func(v string, set bool) bool {
				n, err := strconv.Atoi(v)
				return !set || err == nil && n >= 0
			})
		}),
		node("4.2.9", "kubelet --tls-cert-file and key", func(e *cisEnv) []string {
			return append(e.kubeletSetting("tls-cert-file", "tlsCertFile", func(_ string, set bool) bool { return set }),
				e.kubeletSetting("tls-private-key-file", "tlsPrivateKeyFile", func(_ string, set bool) bool { return set })...)
		}),
		node("4.2.10", "kubelet rotates certificates", func(e *cisEnv) []string {
			return e.kubeletSetting("rotate-certificates", "rotateCertificates", func(v string, set bool) bool { return !set || v == "true" })
		}),
		node("4.2.11", "RotateKubeletServerCertificate not off", func(e *cisEnv) []string {
			return e.kubeletSetting("feature-gates", "featureGates.RotateKubeletServerCertificate", func(v string, set bool) bool {
				return !set || !strings.Contains(v, "false")
			})
		}),
		node("4.2.12", "kubelet strong ciphers", func(e *cisEnv) []string {
			var v string
			out := e.kubeletSetting("tls-cipher-suites", "tlsCipherSuites", func(got string, set bool) bool { v = got; return set })
			return append(out, validElements("kubelet tlsCipherSuites", v, kubeletCiphers)...)
		}),
		node("4.2.13", "Pod PID limit", func(e *cisEnv) []string {
			return e.kubeletSetting("pod-max-pids", "podPidsLimit", func(_ string, set bool) bool { return set })
		}),
		node("4.2.14", "seccomp default", func(e *cisEnv) []string {
			return e.kubeletSetting("seccomp-default", "seccompDefault", func(v string, set bool) bool { return set && v == "true" })
		}),
		cp("4.3.1", "kube-proxy metrics on localhost", func(e *cisEnv) []string {
			out := kubectlTry(e.t, e.n, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data.config\\.conf}")
			if out.err != nil {
				return []string{out.err.Error()}
			}
			var conf map[string]any
			if err := yaml.Unmarshal([]byte(out.out), &conf); err != nil {
				return []string{err.Error()}
			}
			if v, _ := conf["metricsBindAddress"].(string); v != "" && !strings.HasPrefix(v, "127.0.0.1") {
				return []string{"metricsBindAddress is " + v}
			}
			return nil
		}),
	)
	return items
}

// rotateCISCluster rotates the CAs of TestCISHardening's cluster (node1
// and node3 its control-plane nodes, node2 a worker; the endpoint is
// node1's API server: no load balancer), as TestRotateCAControlPlanes
// drives the phases, and checks what the profile adds: the kubelets'
// serving certificates are asked for again and approved (the worker's
// by the approver, through the API server), the approver's kubeconfig
// ends with the new CA alone and a client certificate of it, and the
// approver was never restarted for it (it reads its changed kubeconfig by
// itself); etcd's files stay its user's; kubectl logs and exec reach a
// Pod on the worker through --kubelet-certificate-authority.
func rotateCISCluster(t *testing.T, n1, n2, n3 *testbed.Node) {
	nodes := []*testbed.Node{n1, n2, n3}
	controlPlanes := []*testbed.Node{n1, n3}
	approverConf := cis.ApproverKubeconfig("/etc/kubernetes")
	approverRestarts := func() map[string]string {
		out := map[string]string{}
		for _, n := range controlPlanes {
			out[n.Name] = kubectl(t, n1, "-n", "kube-system", "get", "pod", "kubeadm-kubelet-serving-approver-"+n.Name, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
		}
		return out
	}
	restartsBefore := approverRestarts()
	oldCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/ca.crt"))[0]
	// etcd's user, whose files must stay its own. /etc/passwd is this
	// machine's: say when something outside the rotation changes it.
	etcdIDs, ok, err := rootless.LookupAccount("/etc", cis.EtcdUser)
	if err != nil || !ok {
		t.Fatalf("the etcd user: %v, %v", ok, err)
	}
	passwdChanged := func(after string) {
		if _, ok, _ := rootless.LookupAccount("/etc", cis.EtcdUser); !ok {
			fi, _ := os.Stat("/etc/passwd")
			t.Logf("WARNING: the etcd user is gone from /etc/passwd (modified %s), seen after %s", fi.ModTime().UTC().Format(time.RFC3339Nano), after)
		}
	}
	start := time.Now()
	step := func(n *testbed.Node, args ...string) result {
		t.Helper()
		r := runWithin(t, 10*time.Minute, n, "kubeadm", append([]string{"certs", "rotate-ca"}, args...)...)
		passwdChanged(fmt.Sprintf("%s's %v", n.Name, args))
		t.Logf("%s: rotate-ca %v took %v (ended %s), exit %d:\n%s%s", n.Name, args, r.Took.Round(time.Millisecond), time.Now().UTC().Format("15:04:05"), r.Code, r.Stdout, r.Stderr)
		if r.Code != 0 {
			t.Fatalf("%s: rotate-ca %v: exit %d", n.Name, args, r.Code)
		}
		return r
	}
	prep := step(n1, "phase", "prepare", "--upload-certs")
	key := ""
	if _, after, ok := strings.Cut(prep.Stdout, "[rotate-ca] Using certificate key:\n"); ok {
		key, _, _ = strings.Cut(after, "\n")
	}
	if len(key) != 64 {
		t.Fatalf("prepare --upload-certs printed no certificate key:\n%s", prep.Stdout)
	}
	step(n3, "phase", "prepare", "--certificate-key", key)
	dry := step(n1, "phase", "trust", "--dry-run")
	if want := "Would write " + approverConf + " (certificate-authority-data)"; !strings.Contains(dry.Stdout, want) {
		t.Errorf("trust --dry-run does not say %q", want)
	}
	for _, n := range []*testbed.Node{n1, n3, n2} {
		step(n, "phase", "trust")
	}
	for _, n := range controlPlanes {
		checkTrusts(t, n.Name+" "+approverConf+" after trust", kubeconfigCAData(t, mustRead(t, n.HostPath(approverConf))), carotation.Bundle{oldCA, caBundle(t, n.HostPath("/etc/kubernetes/pki/rotate-ca/ca.crt"))[0]})
	}
	dry = step(n1, "phase", "sign", "--dry-run")
	if want := "Would re-issue " + cis.ApproverKubeconfigFile + " with the new CA"; !strings.Contains(dry.Stdout, want) {
		t.Errorf("sign --dry-run does not say %q", want)
	}
	for _, n := range []*testbed.Node{n1, n3, n2} {
		step(n, "phase", "sign")
	}
	drop := "--" + carotation.DropOldServiceAccountKeyFlag
	step(n1, "phase", "finish", drop)
	step(n3, "phase", "finish", drop)
	step(n2, "phase", "finish")
	t.Logf("the whole rotation took %v", time.Since(start).Round(time.Second))

	newCA := caBundle(t, n1.HostPath("/etc/kubernetes/pki/ca.crt"))[0]
	if newCA.Equal(oldCA) {
		t.Fatal("ca.crt still holds the old CA")
	}
	checkTrustPoints(t, n1, nodes, carotation.Bundle{newCA})
	pool := x509.NewCertPool()
	pool.AddCert(newCA)
	for _, n := range nodes {
		for _, pair := range []string{"kubelet-client-current.pem", "kubelet-server-current.pem"} {
			cert := firstCertificate(t, []byte(mustRun(t, n, "cat", "/var/lib/kubelet/pki/"+pair)))
			if err := cert.CheckSignatureFrom(newCA); err != nil {
				t.Errorf("%s: the kubelet's %s is not of the new CA: %v", n.Name, pair, err)
			}
			if pair == "kubelet-server-current.pem" {
				if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: n.Name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
					t.Errorf("%s's serving certificate: %v", n.Name, err)
				}
			}
		}
	}
	// The worker's serving certificate came through a request the
	// approver approved during the rotation.
	approved := kubectl(t, n1, "get", "csr", "-o", `jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.spec.username}{" "}{.status.conditions[0].reason}{"\n"}{end}`)
	if c := strings.Count(approved, "system:node:node2 KubeadmKubeletServingApproved"); c < 2 {
		t.Errorf("node2 has %d serving requests kubeadm's approver approved, want the first and the rotation's:\n%s", c, approved)
	}
	for _, n := range controlPlanes {
		checkTrusts(t, n.Name+" "+approverConf, kubeconfigCAData(t, mustRead(t, n.HostPath(approverConf))), carotation.Bundle{newCA})
		leaf, err := pki.ReadKubeconfigClientCert(n.HostPath(approverConf))
		if err != nil || leaf.CheckSignatureFrom(newCA) != nil {
			t.Errorf("%s: the approver's client certificate is not of the new CA (%v)", n.Name, err)
		}
		for _, f := range []string{"server.crt", "server.key", "peer.crt", "peer.key", "ca.crt"} {
			fi, err := os.Stat(n.HostPath("/etc/kubernetes/pki/etcd/" + f))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); int64(st.Uid) != etcdIDs.UID || int64(st.Gid) != etcdIDs.GID || fi.Mode().Perm() != cis.FileMode {
				t.Errorf("%s: etcd/%s is %d:%d %v after the rotation, want etcd's %d:%d %v", n.Name, f, st.Uid, st.Gid, fi.Mode().Perm(), etcdIDs.UID, etcdIDs.GID, cis.FileMode)
			}
		}
		logs := kubectl(t, n1, "-n", "kube-system", "logs", "kubeadm-kubelet-serving-approver-"+n.Name)
		t.Logf("%s: the approver used its changed kubeconfig %d times", n.Name, strings.Count(logs, "changed: using its new credential"))
	}
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 60*time.Second)
	}
	for _, n := range controlPlanes {
		eventually(t, 60*time.Second, "the approver Running on "+n.Name, func() error {
			return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "pod", "kubeadm-kubelet-serving-approver-"+n.Name, "-o", "jsonpath={.status.phase}"), "Running")
		})
	}
	if after := approverRestarts(); fmt.Sprint(after) != fmt.Sprint(restartsBefore) {
		t.Errorf("the approvers' restart counts went from %v to %v: they should read their kubeconfig again by themselves", restartsBefore, after)
	}
	// The API server reaches the worker's kubelet, verifying its serving
	// certificate of the new CA: logs and exec work.
	logsAndExecOnWorker(t, n1)
}

// logsAndExecOnWorker checks that the API server reaches node2's kubelet
// (kubectl logs and exec to its kube-proxy Pod), verifying its serving
// certificate with --kubelet-certificate-authority.
func logsAndExecOnWorker(t *testing.T, n1 *testbed.Node) {
	t.Helper()
	var pod string
	eventually(t, 60*time.Second, "kube-proxy running on node2", func() error {
		out := kubectlTry(t, n1, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "--field-selector", "spec.nodeName=node2,status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}")
		pod = out.out
		return expectOutput(out, "nonempty")
	})
	eventually(t, 30*time.Second, "kubectl logs of a Pod on node2", func() error {
		return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "logs", pod, "--tail=1"), "nonempty")
	})
	if got := kubectl(t, n1, "-n", "kube-system", "exec", pod, "--", "kube-proxy", "--version"); !strings.Contains(got, testbed.KubernetesVersion) {
		t.Errorf("kubectl exec in %s: %q", pod, got)
	}
}
