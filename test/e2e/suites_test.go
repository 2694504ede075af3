package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// ConformanceEnv chooses the Conformance run of TestConformance: "full"
// (the whole suite, as "make conformance" runs it), "serial" (only its
// [Serial] part), "ci" (a fixed part, ciConformanceFocus, which CI ran
// until it no longer fit CI's time), or
// else a ginkgo focus of its own (a regular expression: a few specs to
// look at). Unset, TestConformance is skipped.
const ConformanceEnv = "KUBEADM_E2E_CONFORMANCE"

// The fixed part is the Conformance specs of apps, cli and auth
// (controllers, kubectl, RBAC and service accounts on a cluster ours
// made), but for those that mostly wait: [Slow] ones and the four probes
// that watch a container not being restarted for four minutes. About 7
// minutes with the cluster; docs/conformance.md says why this part.
const (
	ciConformanceFocus = `\[sig-(apps|cli|auth)\].*\[Conformance\]`
	ciConformanceSkip  = `\[Slow\]|should \*not\* be restarted|` + testBedLimits
)

// testBedLimits matches the Conformance specs that fail on this test bed
// whichever kubeadm makes the cluster (docs/conformance.md names each and
// why): the four that print their environment with "sh -c env" in the
// busybox image, whose Debian busybox 1.35 sh drops the variables whose
// names are not shell names, and the image volume one, which Debian's
// containerd 1.6 cannot mount (the CRI's image volumes came with
// containerd 2.1). A full run reports them without failing; the fixed part
// skips them.
const testBedLimits = `\[sig-node\] (ConfigMap|Secrets) should be consumable (via the environment|as environment variable names)|` +
	`\[sig-node\] ImageVolume should succeed with pod and pull policy of Always`

// requireSuites returns the toolchain, failing or skipping (as
// unavailable does) when one of upstream's test programs is not built.
func requireSuites(t *testing.T, programs []string) *testbed.Toolchain {
	t.Helper()
	tc := requireToolchain(t)
	if missing := testbed.MissingSuites(tc.Repo, tc.KubernetesVersion, programs); len(missing) > 0 {
		unavailable(t, "upstream's test programs of %s not built: %s (go run ./hack/testbed prepare builds them)",
			tc.KubernetesVersion, strings.Join(missing, ", "))
	}
	return tc
}

// regularCluster makes the cluster of kinder's "regular" workflow on the
// test bed: node1 runs init with --upload-certs (its own address is the
// controlPlaneEndpoint), node2 and node3 join as control-plane nodes,
// node4 and node5 as workers, each with the bridge pod network routed
// between nodes; it waits until every node is Ready and CoreDNS answers.
func regularCluster(t *testing.T, c *testbed.Cluster) []*testbed.Node {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	nodes, err := c.Up(ctx, "node1", "node2", "node3", "node4", "node5")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("five nodes up in %v", time.Since(start).Round(time.Second))
	for _, n := range nodes {
		if err := n.WriteCNIConfig(); err != nil {
			t.Fatal(err)
		}
	}
	n1 := nodes[0]
	cfg := filepath.Join(n1.Dir, "kubeadm.yaml")
	writeFile(t, cfg, testbed.InitConfig(n1, testbed.KubernetesVersion, ""))
	r := run(t, n1, "kubeadm", "init", "--config", cfg, "--upload-certs", ignoreFindings())
	if r.Code != 0 {
		t.Fatalf("kubeadm init: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	jc := parseJoinCommand(t, r.Stdout)
	if jc.certificateKey == "" {
		t.Fatalf("init --upload-certs printed no certificate key:\n%s", r.Stdout)
	}
	for i, n := range nodes[1:] {
		args := []string{"join", jc.endpoint, "--token", jc.token, "--discovery-token-ca-cert-hash", jc.hash, ignoreFindings()}
		if i < 2 {
			args = append(args, "--control-plane", "--certificate-key", jc.certificateKey, "--apiserver-advertise-address", n.Addr().String())
		}
		r := run(t, n, "kubeadm", args...)
		if r.Code != 0 {
			t.Fatalf("kubeadm %s on %s: exit %d\n%s\n%s", strings.Join(args[:1], " "), n.Name, r.Code, r.Stdout, r.Stderr)
		}
	}
	for _, n := range nodes {
		nodeReady(t, n1, n.Name, 3*time.Minute)
	}
	eventually(t, 3*time.Minute, "CoreDNS ready", func() error {
		return expectOutput(kubectlTry(t, n1, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.readyReplicas}"), "2")
	})
	t.Logf("the cluster of three control-plane nodes and two workers is ready %v after the nodes were started", time.Since(start).Round(time.Second))
	return nodes
}

// TestKubeadmSuite runs upstream's kubeadm e2e suite (test/e2e_kubeadm,
// as kinder's "regular" workflow does) with no spec skipped against the
// five-node cluster our kubeadm makes: every spec must pass but the
// dual-stack one, which skips itself on a single-stack cluster.
func TestKubeadmSuite(t *testing.T) {
	tc := requireSuites(t, testbed.KubeadmSuitePrograms)
	c := newCluster(t, "e2es")
	nodes := regularCluster(t, c)
	report := filepath.Join(t.TempDir(), "e2e_kubeadm.json")
	start := time.Now()
	r := runWithin(t, 15*time.Minute, nodes[0], tc.SuiteProgram("e2e_kubeadm.test"),
		"--kubeconfig=/etc/kubernetes/admin.conf", "--ginkgo.no-color", "--ginkgo.json-report="+report)
	t.Logf("e2e_kubeadm.test took %v (exit %d)", time.Since(start).Round(time.Second), r.Code)
	specs, err := readGinkgoReport(report)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, r.Stdout, r.Stderr)
	}
	s := summarize(specs)
	t.Logf("e2e_kubeadm: %s", s)
	var wrong []string
	for _, sp := range specs {
		switch {
		case sp.State == "passed":
		case sp.State == "skipped" && strings.Contains(sp.Name, "dual-stack"):
		default:
			wrong = append(wrong, fmt.Sprintf("%s: %s %s", sp.State, sp.Name, sp.Message))
		}
	}
	if len(wrong) > 0 || r.Code != 0 || s.Passed == 0 {
		t.Errorf("e2e_kubeadm.test exit %d; specs not passed:\n%s\n--- output:\n%s\n%s", r.Code, strings.Join(wrong, "\n"), r.Stdout, r.Stderr)
	}
}

// TestConformance runs the [Conformance] specs of upstream's e2e suite on
// the five-node cluster (regularCluster), as kinder's conformance jobs
// do: first in parallel every spec that is not [Serial], [Disruptive] or
// [Flaky], then the [Serial] ones one at a time. It runs only when
// ConformanceEnv asks for it ("make conformance": the whole suite; "ci": a
// fixed subset), writes the ginkgo JSON and JUnit reports and a summary
// into _artifacts/conformance/<time>-<kubeadm>/, and fails if a spec
// failed.
func TestConformance(t *testing.T) {
	mode := os.Getenv(ConformanceEnv)
	focus, skip := `\[Conformance\]`, `\[Disruptive\]|\[Flaky\]`
	switch mode {
	case "":
		t.Skipf("set %s=full (the whole suite) or ci (the fixed part) to run it", ConformanceEnv)
	case "full", "serial":
	case "ci":
		focus, skip = ciConformanceFocus, skip+"|"+ciConformanceSkip
	default:
		focus, mode = mode, "focus"
	}
	tc := requireSuites(t, testbed.ConformancePrograms)
	images, err := tc.TestImages(context.Background(), testWriter{t})
	if err != nil {
		t.Fatalf("the test images: %v", err)
	}
	if len(images.NotMade) > 0 {
		t.Logf("images the suite lists that the test bed does not make (docs/conformance.md): %s", strings.Join(images.NotMade, " "))
	}
	c := newCluster(t, "e2ec")
	c.Archives = append(c.Archives, images.Archives...)
	// The ImageVolume spec pulls its image with policy Always.
	c.ServeImages = true
	maker := "ours"
	if otherKubeadm() {
		maker = "other"
	}
	out := filepath.Join(tc.Repo, "_artifacts", "conformance", time.Now().UTC().Format("20060102-150405")+"-"+mode+"-"+maker)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nodes := regularCluster(t, c)
	var lines []string
	// The [Serial] specs are chosen by ginkgo's Serial label, which the
	// suite sets with the "[Serial]" of their names: the names' order of
	// tags is not stable ("[Serial] ... [Conformance]" in v1.36's suite,
	// "[Conformance] [Serial]" in v1.37's).
	parts := []struct {
		name, focus, skip, labels string
		procs                     int
	}{
		{"parallel", focus, `\[Serial\]|` + skip, "", conformanceProcs()},
		{"serial", focus, skip, "Serial", 1},
	}
	switch mode {
	case "ci":
		// The fixed part runs no [Serial] spec; the full run keeps both parts.
		parts = parts[:1]
	case "serial":
		parts = parts[1:]
	}
	for _, part := range parts {
		partStart := time.Now()
		args := []string{"--no-color", "--procs=" + fmt.Sprint(part.procs), "--timeout=6h",
			"--focus=" + part.focus, "--skip=" + part.skip, "--output-dir=" + out,
			"--json-report=" + part.name + ".json", "--junit-report=" + part.name + ".xml"}
		if part.labels != "" {
			args = append(args, "--label-filter="+part.labels)
		}
		args = append(args, tc.SuiteProgram("e2e.test"), "--",
			"--kubeconfig=/etc/kubernetes/admin.conf", "--provider=skeleton")
		log := filepath.Join(out, part.name+".log")
		r := runLogged(t, 6*time.Hour, nodes[0], log, tc.SuiteProgram("ginkgo"), args...)
		specs, err := readGinkgoReport(filepath.Join(out, part.name+".json"))
		if err != nil {
			t.Fatalf("the %s run (exit %d, output in %s): %v", part.name, r.Code, log, err)
		}
		s := summarize(specs)
		line := fmt.Sprintf("%s (%d processes): %s, wall %v", part.name, part.procs, s, time.Since(partStart).Round(time.Second))
		lines = append(lines, line)
		t.Log(line)
		limits := regexp.MustCompile(testBedLimits)
		for _, name := range s.FailedNames {
			if limits.MatchString(name) {
				t.Logf("%s: failed, as on any cluster of this test bed (docs/conformance.md): %s", part.name, name)
				continue
			}
			t.Errorf("%s: failed: %s", part.name, name)
		}
		if s.Run == 0 {
			t.Errorf("the %s run ran no spec (exit %d, output in %s)", part.name, r.Code, log)
		}
	}
	lines = append(lines, fmt.Sprintf("total wall time with the cluster: %v (kubeadm: %s)", time.Since(start).Round(time.Second), maker))
	writeFile(t, filepath.Join(out, "summary.txt"), strings.Join(lines, "\n")+"\n")
	t.Logf("reports and summary in %s", out)
}

// conformanceProcs is the number of ginkgo processes of the parallel run
// (KUBEADM_E2E_CONFORMANCE_PROCS, default 4).
func conformanceProcs() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("KUBEADM_E2E_CONFORMANCE_PROCS"), &n); err == nil && n > 0 {
		return n
	}
	return 4
}

// runLogged runs a program in a node with its output going to a host
// file, for runs too long to keep in memory or in the test log.
func runLogged(t *testing.T, limit time.Duration, n *testbed.Node, log, name string, args ...string) result {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := n.Command(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	start := time.Now()
	err = cmd.Run()
	r := result{Took: time.Since(start)}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s in %s: %v", name, n.Name, err)
	}
	return r
}

// specResult is one spec of a ginkgo JSON report.
type specResult struct {
	Name, State, Message string
	// Ran is false for a spec the focus and skip filters left out.
	Ran     bool
	Runtime time.Duration
}

// readGinkgoReport reads the It specs of a ginkgo JSON report (the
// --json-report format of ginkgo v2: a list of suite reports).
func readGinkgoReport(path string) ([]specResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the ginkgo report: %w", err)
	}
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
			NumAttempts             int
			RunTime                 time.Duration
			Failure                 *struct{ Message string }
		}
	}
	if err := json.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("reading the ginkgo report %s: %w", path, err)
	}
	var out []specResult
	for _, s := range suites {
		for _, sp := range s.SpecReports {
			if sp.LeafNodeType != "It" {
				continue
			}
			r := specResult{Name: strings.Join(append(sp.ContainerHierarchyTexts, sp.LeafNodeText), " "),
				State: sp.State, Ran: sp.NumAttempts > 0, Runtime: sp.RunTime}
			if sp.Failure != nil {
				r.Message = sp.Failure.Message
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// summary counts the specs of a run.
type summary struct {
	Run, Passed, Failed, Skipped int
	FailedNames                  []string
}

func (s summary) String() string {
	return fmt.Sprintf("%d specs run, %d passed, %d failed, %d skipped", s.Run, s.Passed, s.Failed, s.Skipped)
}

// summarize counts the specs that ran (skipped ones are those that
// skipped themselves, not those the filters left out).
func summarize(specs []specResult) summary {
	var s summary
	for _, sp := range specs {
		if !sp.Ran {
			continue
		}
		s.Run++
		switch sp.State {
		case "passed":
			s.Passed++
		case "skipped", "pending":
			s.Skipped++
		default:
			s.Failed++
			s.FailedNames = append(s.FailedNames, sp.Name)
		}
	}
	sort.Strings(s.FailedNames)
	return s
}

// TestReadGinkgoReport checks the counting of a ginkgo JSON report: specs
// the filters left out do not count, a spec that skipped itself does.
func TestReadGinkgoReport(t *testing.T) {
	report := `[{"SuiteDescription":"Kubernetes e2e suite","SpecReports":[
 {"LeafNodeType":"SynchronizedBeforeSuite","State":"passed","NumAttempts":1},
 {"ContainerHierarchyTexts":["[sig-apps] Job"],"LeafNodeText":"should run a job [Conformance]","LeafNodeType":"It","State":"passed","NumAttempts":1,"RunTime":12000000000},
 {"ContainerHierarchyTexts":["[sig-network] DNS"],"LeafNodeText":"should resolve [Conformance]","LeafNodeType":"It","State":"failed","NumAttempts":1,"Failure":{"Message":"timed out"}},
 {"ContainerHierarchyTexts":["networking","dual-stack"],"LeafNodeText":"should be configured","LeafNodeType":"It","State":"skipped","NumAttempts":1,"Failure":{"Message":"single-stack"}},
 {"ContainerHierarchyTexts":["[sig-storage] CSI"],"LeafNodeText":"not focused","LeafNodeType":"It","State":"skipped","NumAttempts":0}
]}]`
	p := filepath.Join(t.TempDir(), "report.json")
	writeFile(t, p, report)
	specs, err := readGinkgoReport(p)
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(specs)
	if got := s.String(); got != "3 specs run, 1 passed, 1 failed, 1 skipped" {
		t.Errorf("summary %q", got)
	}
	if len(s.FailedNames) != 1 || s.FailedNames[0] != "[sig-network] DNS should resolve [Conformance]" {
		t.Errorf("failed %q", s.FailedNames)
	}
	if specs[0].Runtime != 12*time.Second {
		t.Errorf("runtime %v", specs[0].Runtime)
	}
}

// TestTestBedLimits checks that testBedLimits names the four environment
// specs and the image volume one, and no other spec.
func TestTestBedLimits(t *testing.T) {
	limits := regexp.MustCompile(testBedLimits)
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"[sig-node] ConfigMap should be consumable via the environment [NodeConformance] [Conformance]", true},
		{"[sig-node] ConfigMap should be consumable as environment variable names with various prefixes [Conformance]", true},
		{"[sig-node] Secrets should be consumable via the environment [NodeConformance] [Conformance]", true},
		{"[sig-node] Secrets should be consumable as environment variable names variable names with various prefixes [Conformance]", true},
		{"[sig-node] Secrets should be consumable from pods in env vars [NodeConformance] [Conformance]", false},
		{"[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance] [Conformance]", false},
		{"[sig-node] ConfigMap should fail to create ConfigMap with empty key [Conformance]", false},
		{"[sig-node] ImageVolume should succeed with pod and pull policy of Always [LinuxOnly] [MinimumKubeletVersion:1.35] [Conformance]", true},
	} {
		if got := limits.MatchString(tt.name); got != tt.want {
			t.Errorf("%q: matched %v, want %v", tt.name, got, tt.want)
		}
	}
}
