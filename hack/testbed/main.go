// Command testbed prepares this machine for real Kubernetes nodes and runs
// them (see test/testbed and docs/testbed.md):
//
//	testbed init            install, build, start node1 and run our "kubeadm init" on it
//	testbed up [NODE...]    install, build and start nodes (default node1), nothing else
//	testbed exec NODE -- COMMAND [ARG...]
//	                        run a command inside a node (kubectl, kubeadm, crictl, a shell)
//	testbed down            stop and remove every node
//	testbed prepare         only install packages and build programs and images
//	                        (of --kubernetes-version and, for the upgrade test,
//	                        of --upgrade-from), and upstream's test suites and
//	                        the images they run (unless --suites=false; only
//	                        kubeadm's with --conformance=false)
//
// Inside a node the same program is the node's boot program ("testbed
// boot", started by the test bed) and its stand-in systemctl (when called
// by that name); in a cluster's hub it is the registry of the cluster's
// images ("testbed registry", see testbed.Cluster.ServeImages) and the
// load balancer in front of its API servers ("testbed api-loadbalancer",
// see testbed.Cluster.ServeAPILoadBalancer).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// clusterName names the cluster this command manages (its network
// namespaces are kadm-hub, kadm-node1, ...).
const clusterName = "kadm"

func main() {
	if filepath.Base(os.Args[0]) == "systemctl" {
		os.Exit(testbed.Systemctl(os.Args[1:], os.Stdout))
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: testbed init|up [NODE...]|exec NODE -- COMMAND...|down|prepare")
	}
	if args[0] == "registry" {
		if len(args) < 2 {
			return errors.New("usage: testbed registry ADDRESS ARCHIVE [ARCHIVE]")
		}
		return testbed.ServeRegistry(args[1], args[2:], readyPipe())
	}
	if args[0] == "api-loadbalancer" {
		if len(args) < 3 {
			return errors.New("usage: testbed api-loadbalancer ADDRESS UPSTREAM [UPSTREAM]")
		}
		return testbed.RunAPILoadBalancer(args[1], args[2:], readyPipe(), stdout)
	}
	if args[0] == "boot" {
		if len(args) != 2 {
			return errors.New("usage: testbed boot CONFIG")
		}
		return testbed.Boot(args[1], os.NewFile(3, "go"), os.NewFile(4, "ready"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("testbed", flag.ContinueOnError)
	version := fs.String("kubernetes-version", testbed.KubernetesVersion, "Kubernetes version of the upstream binaries and images")
	kubeadmBin := fs.String("kubeadm", "kubeadm", "kubeadm program init runs (default: ours; give a path to compare another)")
	suites := fs.Bool("suites", true, "prepare also builds upstream's e2e_kubeadm and e2e suites and the images of the Conformance specs (docs/conformance.md)")
	conformance := fs.Bool("conformance", true, "with --suites: build the e2e suite and the Conformance specs' images too (false: kubeadm's e2e suite only, as CI)")
	upgradeFrom := fs.String("upgrade-from", testbed.UpgradeFromVersion+","+testbed.PatchFromVersion,
		"older Kubernetes versions (comma-separated) whose binaries and images prepare also builds, for the upgrade tests (empty: none)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("must run as root (namespaces, mounts, cgroups)")
	}
	repo, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	stateDir := filepath.Join(repo, ".cache", "testbed", "state")
	switch args[0] {
	case "prepare":
		tc, err := prepare(ctx, repo, *version, stdout)
		if err != nil {
			return err
		}
		if *suites {
			if err := prepareSuites(ctx, tc, *conformance, stdout); err != nil {
				return err
			}
		}
		for _, v := range strings.Split(*upgradeFrom, ",") {
			if v == "" || v == *version {
				continue
			}
			if err := prepareUpgradeFrom(ctx, tc, v, stdout); err != nil {
				return err
			}
		}
		return nil
	case "up":
		tc, err := prepare(ctx, repo, *version, stdout)
		if err != nil {
			return err
		}
		names := fs.Args()
		if len(names) == 0 {
			names = []string{"node1"}
		}
		_, err = tc.Cluster(clusterName, stateDir, stdout).Up(ctx, names...)
		return err
	case "init":
		tc, err := prepare(ctx, repo, *version, stdout)
		if err != nil {
			return err
		}
		return initNode(ctx, tc.Cluster(clusterName, stateDir, stdout), *version, *kubeadmBin, stdout, stderr)
	case "exec":
		rest := fs.Args()
		if len(rest) < 2 {
			return errors.New("usage: testbed exec NODE -- COMMAND [ARG...]")
		}
		c := &testbed.Cluster{Name: clusterName, StateDir: stateDir}
		node, err := existingNode(c, rest[0])
		if err != nil {
			return err
		}
		argv := rest[1:]
		if argv[0] == "--" {
			argv = argv[1:]
		}
		cmd := node.Command(context.Background(), argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		cmd.Env = append(cmd.Env, "TERM="+os.Getenv("TERM"), "KUBECONFIG=/etc/kubernetes/admin.conf")
		err = cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		return err
	case "down":
		c := &testbed.Cluster{Name: clusterName, StateDir: stateDir, Out: stdout}
		return c.Down(context.Background())
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// prepare installs what is missing and builds programs and images.
func prepare(ctx context.Context, repo, version string, out io.Writer) (*testbed.Toolchain, error) {
	if err := testbed.InstallPackages(ctx, out); err != nil {
		return nil, err
	}
	if err := testbed.BuildUpstream(ctx, repo, version, out); err != nil {
		return nil, err
	}
	return testbed.Build(ctx, repo, version, filepath.Join(repo, ".cache", "testbed", "bin"), out)
}

// prepareSuites builds upstream's kubeadm e2e suite of tc's version and,
// with conformance, the Kubernetes e2e suite and the test images its
// Conformance specs run.
func prepareSuites(ctx context.Context, tc *testbed.Toolchain, conformance bool, out io.Writer) error {
	programs := testbed.KubeadmSuitePrograms
	if conformance {
		programs = append(slices.Clone(programs), testbed.ConformancePrograms...)
	}
	if err := testbed.BuildSuites(ctx, tc.Repo, tc.KubernetesVersion, programs, out); err != nil {
		return err
	}
	if !conformance {
		return nil
	}
	_, err := tc.TestImages(ctx, out)
	return err
}

// prepareUpgradeFrom builds the upstream binaries of an older version and
// its images, with the programs of tc: the upgrade test starts a cluster
// from them.
func prepareUpgradeFrom(ctx context.Context, tc *testbed.Toolchain, version string, out io.Writer) error {
	if err := testbed.BuildUpstream(ctx, tc.Repo, version, out); err != nil {
		return err
	}
	_, err := tc.WithVersion(ctx, version, out)
	return err
}

// existingNode finds a running node of the cluster.
func existingNode(c *testbed.Cluster, name string) (*testbed.Node, error) {
	nodes, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Name == name && n.Running() {
			return n, nil
		}
	}
	return nil, fmt.Errorf("node %s does not run (start it with: testbed up %s)", name, name)
}

// initNode starts node1 with a pod network and runs our kubeadm init on
// it, then says how to reach the cluster.
func initNode(ctx context.Context, c *testbed.Cluster, version, kubeadm string, stdout, stderr io.Writer) error {
	nodes, err := c.Up(ctx, "node1")
	if err != nil {
		return err
	}
	n := nodes[0]
	if err := n.WriteCNIConfig(); err != nil {
		return err
	}
	cfgPath := filepath.Join(n.Dir, "kubeadm.yaml")
	if err := os.WriteFile(cfgPath, []byte(testbed.InitConfig(n, version, "")), 0o644); err != nil {
		return err
	}
	if kubeadm != "kubeadm" {
		if kubeadm, err = filepath.Abs(kubeadm); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "[testbed] running: %s init --config %s --ignore-preflight-errors=%s\n",
		kubeadm, cfgPath, strings.Join(testbed.PreflightFindings, ","))
	start := time.Now()
	cmd := n.Command(ctx, kubeadm, "init", "--config", cfgPath,
		"--ignore-preflight-errors="+strings.Join(testbed.PreflightFindings, ","))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubeadm init on %s: %w (kubelet log: %s)", n.Name, err, filepath.Join(n.LogDir(), "kubelet.log"))
	}
	fmt.Fprintf(stdout, `
[testbed] kubeadm init took %.1fs. The cluster runs on node %s (%s), inside its own namespaces.
Use it with:

  go run ./hack/testbed exec node1 -- kubectl get nodes,pods -A
  go run ./hack/testbed exec node1 -- bash          # a shell on the node

Logs: %s. Remove everything with:

  go run ./hack/testbed down
`, time.Since(start).Seconds(), n.Name, n.Addr(), n.LogDir())
	return nil
}

// readyPipe is the pipe the test bed gives its hub processes as file 3,
// to write "ready" to; nil when there is none.
func readyPipe() io.WriteCloser {
	f := os.NewFile(3, "ready")
	if f == nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	return f
}
