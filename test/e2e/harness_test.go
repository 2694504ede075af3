package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// Env, set to 1, turns a missing prerequisite into a failure instead of a
// skip (CI sets it).
const Env = "KUBEADM_E2E"

// KubeadmEnv, when set, names a kubeadm program the test clusters use
// instead of ours (upstream's, say, .cache/upstream/v1.37.2/kubeadm; a
// relative path is taken from the repository's root): to check what a test
// expects against the kubeadm we re-implement. Tests of our own wording are
// expected to fail with it.
const KubeadmEnv = "KUBEADM_E2E_KUBEADM"

// FullEnv=1 also runs the long end-to-end tests (`make e2e-full`). CI
// runs one fast test per capability; the long ones, which would take it
// past its time budget, run here, and their latest full run is recorded
// in docs/testbed.md.
const FullEnv = "KUBEADM_E2E_FULL"

// longTest skips t unless FullEnv=1: it takes about the given time on
// two cores.
func longTest(t *testing.T, takes string) {
	t.Helper()
	if os.Getenv(FullEnv) != "1" {
		t.Skipf("long test (about %s): set %s=1 (make e2e-full) to run it", takes, FullEnv)
	}
}

// otherKubeadm reports whether KubeadmEnv swaps in another kubeadm, for
// checks of what only ours does.
func otherKubeadm() bool { return os.Getenv(KubeadmEnv) != "" }

// unavailable skips the test, or fails it when Env=1.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(Env) == "1" {
		t.Fatalf("end-to-end prerequisites missing with %s=1: %s", Env, msg)
	}
	t.Skipf("skipping (set %s=1 to make this a failure): %s", Env, msg)
}

var (
	toolchainOnce sync.Once
	toolchain     *testbed.Toolchain
	toolchainErr  error
	toolchainDir  string
)

// TestMain removes the shared build folder at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if toolchainDir != "" {
		os.RemoveAll(toolchainDir)
	}
	os.Exit(code)
}

// requireToolchain checks the machine and builds our programs and the
// images once per test binary.
func requireToolchain(t *testing.T) *testbed.Toolchain {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test: not in -short")
	}
	if os.Geteuid() != 0 {
		unavailable(t, "needs root")
	}
	for _, tool := range []string{"containerd", "ctr", "runc", "nsenter", "ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s not installed (go run ./hack/testbed prepare installs it)", tool)
		}
	}
	repo, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if missing := testbed.MissingUpstream(repo, testbed.KubernetesVersion); len(missing) > 0 {
		unavailable(t, "upstream binaries not built: %s (run hack/build-upstream.sh %s)",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	toolchainOnce.Do(func() {
		toolchainDir, toolchainErr = os.MkdirTemp("", "kubeadm-e2e-bin-")
		if toolchainErr != nil {
			return
		}
		var log bytes.Buffer
		toolchain, toolchainErr = testbed.Build(context.Background(), repo, testbed.KubernetesVersion, toolchainDir, &log)
		if toolchainErr != nil {
			toolchainErr = fmt.Errorf("%w\n%s", toolchainErr, log.String())
		}
	})
	if toolchainErr != nil {
		t.Fatalf("building the test bed: %v", toolchainErr)
	}
	return toolchain
}

// requireUpgradeToolchains returns the toolchains of an upgrade between
// two patch releases: from has the programs of requireToolchain with the
// upstream binaries and images of testbed.UpgradeFromVersion, to is
// requireToolchain's (testbed.KubernetesVersion).
func requireUpgradeToolchains(t *testing.T) (from, to *testbed.Toolchain) {
	t.Helper()
	to = requireToolchain(t)
	if missing := testbed.MissingUpstream(to.Repo, testbed.UpgradeFromVersion); len(missing) > 0 {
		unavailable(t, "upstream binaries of %s not built: %s (go run ./hack/testbed prepare builds them)",
			testbed.UpgradeFromVersion, strings.Join(missing, ", "))
	}
	var log bytes.Buffer
	from, err := to.WithVersion(context.Background(), testbed.UpgradeFromVersion, &log)
	if err != nil {
		t.Fatalf("building the images of %s: %v\n%s", testbed.UpgradeFromVersion, err, log.String())
	}
	return from, to
}

// requirePatchToolchains returns the toolchains of a patch upgrade:
// testbed.PatchFromVersion and testbed.UpgradeFromVersion, skipping (or
// failing in CI) when their upstream binaries are not built.
func requirePatchToolchains(t *testing.T) (from, to *testbed.Toolchain) {
	t.Helper()
	tc := requireToolchain(t)
	var out [2]*testbed.Toolchain
	for i, v := range []string{testbed.PatchFromVersion, testbed.UpgradeFromVersion} {
		if missing := testbed.MissingUpstream(tc.Repo, v); len(missing) > 0 {
			unavailable(t, "upstream binaries of %s not built: %s (go run ./hack/testbed prepare builds them)", v, strings.Join(missing, ", "))
		}
		var log bytes.Buffer
		vtc, err := tc.WithVersion(context.Background(), v, &log)
		if err != nil {
			t.Fatalf("building the images of %s: %v\n%s", v, err, log.String())
		}
		out[i] = vtc
	}
	return out[0], out[1]
}

// newCluster returns a cluster named name whose nodes are removed when the
// test ends; the end of each node's kubelet log is printed if it failed.
func newCluster(t *testing.T, name string) *testbed.Cluster {
	t.Helper()
	return manageCluster(t, requireToolchain(t).Cluster(name, clusterStateDir(name), testWriter{t}))
}

// clusterStateDir is a fixed state folder per cluster name, so that a
// cluster left by a killed run is found and removed first.
func clusterStateDir(name string) string {
	return filepath.Join(os.TempDir(), "kubeadm-e2e-"+name)
}

// manageCluster removes what an earlier run left of c, and c itself when
// the test ends; if the test failed, the end of each node's service logs
// is printed first.
func manageCluster(t *testing.T, c *testbed.Cluster) *testbed.Cluster {
	t.Helper()
	if p := os.Getenv(KubeadmEnv); p != "" {
		if !filepath.IsAbs(p) {
			repo, err := testbed.RepoRoot()
			if err != nil {
				t.Fatal(err)
			}
			p = filepath.Join(repo, p)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", KubeadmEnv, err)
		}
		t.Logf("%s: the nodes run %s as kubeadm", KubeadmEnv, p)
		c.Programs["kubeadm"] = p
	}
	if err := c.Down(context.Background()); err != nil {
		t.Fatalf("removing what an earlier run left: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			nodes, _ := c.Nodes()
			for _, n := range nodes {
				for _, log := range []string{"kubelet.log", "containerd.log", "boot.log"} {
					t.Logf("---- end of %s of %s:\n%s", log, n.Name, tail(filepath.Join(n.LogDir(), log), 40))
				}
			}
		}
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("tearing down the cluster: %v", err)
		}
	})
	return c
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// result is a finished command.
type result struct {
	Stdout, Stderr string
	Code           int
	Took           time.Duration
}

// run runs a program in a node and returns its output and exit code; an
// error is only for a program that could not run. It is killed after five
// minutes.
func run(t *testing.T, n *testbed.Node, name string, args ...string) result {
	t.Helper()
	return runWithin(t, 5*time.Minute, n, name, args...)
}

// runWithin is run with another time limit, for programs that may wait
// longer (an upgrade waiting out its timeouts).
func runWithin(t *testing.T, limit time.Duration, n *testbed.Node, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := n.Command(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %s in %s: %v", name, n.Name, err)
	}
	return r
}

// mustRun runs a program in a node and fails the test unless it succeeds.
func mustRun(t *testing.T, n *testbed.Node, name string, args ...string) string {
	t.Helper()
	r := run(t, n, name, args...)
	if r.Code != 0 {
		t.Fatalf("%s %s in %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), n.Name, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// kubectl runs kubectl in a node with admin.conf.
func kubectl(t *testing.T, n *testbed.Node, args ...string) string {
	t.Helper()
	return mustRun(t, n, "kubectl", append([]string{"--kubeconfig=/etc/kubernetes/admin.conf"}, args...)...)
}

// eventually retries check every 250ms until it returns nil or timeout
// passes, then fails the test with the last error.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// treeDigest maps every file under root (a host folder) to a digest of its
// content and mode, for "nothing changed" checks.
func treeDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[rel] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		} else {
			out[rel] = info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", root, err)
	}
	return out
}

// diffDigests lists the paths that differ between two tree digests.
func diffDigests(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// tryResult is the output of a command that may fail.
type tryResult struct {
	out string
	err error
}

// kubectlTry runs kubectl with admin.conf in a node; failure is a result,
// not a test failure (for eventually).
func kubectlTry(t *testing.T, n *testbed.Node, args ...string) tryResult {
	t.Helper()
	r := run(t, n, "kubectl", append([]string{"--kubeconfig=/etc/kubernetes/admin.conf"}, args...)...)
	if r.Code != 0 {
		return tryResult{err: fmt.Errorf("kubectl %s: exit %d: %s", strings.Join(args, " "), r.Code, strings.TrimSpace(r.Stderr))}
	}
	return tryResult{out: strings.TrimSpace(r.Stdout)}
}

// expectOutput checks a result: want "nonempty" accepts any output.
func expectOutput(r tryResult, want string) error {
	if r.err != nil {
		return r.err
	}
	if want == "nonempty" && r.out != "" || r.out == want {
		return nil
	}
	return fmt.Errorf("got %q, want %q", r.out, want)
}

// nodeReady waits up to timeout until the Node called name is Ready, as
// the API server of node via says.
func nodeReady(t *testing.T, via *testbed.Node, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, name+" Ready", func() error {
		return expectOutput(kubectlTry(t, via, "get", "node", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`), "True")
	})
}

// resolved is the resolver Pod's line for a lookup of the kubernetes
// Service that succeeded.
const resolved = " ok kubernetes.default.svc.cluster.local. 10.96.0.1"

// startResolver runs the Pod "resolver" on node2: the test bed's resolve
// image looking up the kubernetes Service through the cluster DNS every
// interval, one line per lookup.
func startResolver(t *testing.T, via *testbed.Node, every string) {
	t.Helper()
	kubectl(t, via, "run", "resolver", "--image="+testbed.ResolveRef, "--image-pull-policy=Never", "--restart=Never",
		"--overrides", `{"spec":{"nodeName":"node2"}}`, "--", "-every="+every, "kubernetes.default.svc.cluster.local.")
}

// resolverAnswers waits for the resolver Pod's first lookup and fails
// the test unless its latest one succeeded.
func resolverAnswers(t *testing.T, via *testbed.Node) {
	t.Helper()
	eventually(t, 90*time.Second, "the resolver Pod resolves the kubernetes Service", func() error {
		return expectOutput(kubectlTry(t, via, "logs", "resolver", "--tail=1"), "nonempty")
	})
	if out := kubectl(t, via, "logs", "resolver", "--tail=1"); !strings.Contains(out, resolved) {
		t.Errorf("the resolver Pod: %s", out)
	}
}

// resolverLatestAnswers waits until the resolver Pod's latest lookup
// succeeded: its first ones may come before kube-proxy routes the DNS
// Service on node2.
func resolverLatestAnswers(t *testing.T, via *testbed.Node) {
	t.Helper()
	eventually(t, 90*time.Second, "the resolver Pod resolves the kubernetes Service", func() error {
		out := kubectlTry(t, via, "logs", "resolver", "--tail=1")
		if out.err == nil && !strings.Contains(out.out, resolved) {
			return fmt.Errorf("%q", out.out)
		}
		return out.err
	})
}
