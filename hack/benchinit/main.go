// Command benchinit times a real "kubeadm init" with our kubeadm and with
// upstream kubeadm v1.37.2 side by side on the node test bed: each round
// starts a fresh node (containerd, kubelet, images imported), runs one
// binary's init with the same configuration, and removes the node; the
// binaries alternate which goes first. It prints, for both, medians of:
//
//   - wall: the whole init;
//   - waited: what init reports it waited for the kubelet and then for the
//     control plane to be healthy (its "healthy after" lines);
//   - boot: from the moment the kubelet init started was launched (the
//     test bed's supervisor stamps each launch in kubelet.log) to the line
//     of init's output reporting the API server healthy: the floor, which
//     no kubeadm can shorten once the kubelet runs. (Ours starts the
//     kubelet on a fresh node before it prints the kubelet-start phase,
//     so that line's time would not do);
//   - above floor: wall minus boot, what kubeadm itself costs.
//
// Run as root:
//
//	go run ./hack/benchinit -rounds 5
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/test/testbed"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds per binary")
	upstream := flag.String("upstream", "", "upstream kubeadm (default: .cache/upstream/<version>/kubeadm)")
	verbose := flag.Bool("v", false, "print every init's output")
	timeline := flag.Bool("timeline", false, "print, for every init, when the components started and served (seconds after the kubelet's launch)")
	flag.Parse()
	if err := run(*rounds, *upstream, report{verbose: *verbose, timeline: *timeline}); err != nil {
		fmt.Fprintln(os.Stderr, "benchinit:", err)
		os.Exit(1)
	}
}

// report says what to print of each run besides its figures: init's
// output (verbose), the components' milestones (timeline).
type report struct{ verbose, timeline bool }

// sample is one init's figures; above (wall - boot) is filled in only for
// medians.
type sample struct{ wall, waited, boot, above time.Duration }

func run(rounds int, upstream string, rep report) error {
	repo, err := testbed.RepoRoot()
	if err != nil {
		return err
	}
	ctx := context.Background()
	version := testbed.KubernetesVersion
	if err := testbed.BuildUpstream(ctx, repo, version, os.Stderr); err != nil {
		return err
	}
	tc, err := testbed.Build(ctx, repo, version, filepath.Join(repo, ".cache", "bench", "bin"), os.Stderr)
	if err != nil {
		return err
	}
	if upstream == "" {
		upstream = filepath.Join(testbed.UpstreamDir(repo, version), "kubeadm")
	}
	if _, err := os.Stat(upstream); err != nil {
		return fmt.Errorf("upstream kubeadm: %w (run hack/build-upstream.sh kubeadm)", err)
	}
	upstream, _ = filepath.Abs(upstream)
	bins := map[string]string{"ours": tc.Kubeadm, "upstream": upstream}
	var quiet io.Writer = io.Discard
	if rep.verbose {
		quiet = os.Stderr
	}
	c := tc.Cluster("bench", filepath.Join(repo, ".cache", "bench", "state"), quiet)
	if err := c.Down(ctx); err != nil {
		return err
	}
	defer c.Down(ctx)
	results := map[string][]sample{}
	for r := 0; r < rounds; r++ {
		order := []string{"ours", "upstream"}
		if r%2 == 1 {
			order = []string{"upstream", "ours"}
		}
		for _, name := range order {
			s, err := once(ctx, c, bins[name], version, rep)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-8s wall %6.2fs waited %6.2fs boot %6.2fs\n", r+1, name, s.wall.Seconds(), s.waited.Seconds(), s.boot.Seconds())
			results[name] = append(results[name], s)
		}
	}
	o, u := median(results["ours"]), median(results["upstream"])
	fmt.Printf("kubeadm init on a fresh test-bed node, %d rounds, medians:\n", rounds)
	for _, x := range []struct {
		name string
		s    sample
	}{{"ours", o}, {"upstream", u}} {
		fmt.Printf("  %-9s wall %6.2fs  waited %6.2fs  boot (floor) %6.2fs  above floor %5.2fs\n",
			x.name, x.s.wall.Seconds(), x.s.waited.Seconds(), x.s.boot.Seconds(), x.s.above.Seconds())
	}
	fmt.Printf("  ours/upstream wall: %.2f\n", o.wall.Seconds()/u.wall.Seconds())
	return nil
}

// healthyAfter matches the lines in which init reports how long it waited
// for the kubelet and for each control-plane component.
var healthyAfter = regexp.MustCompile(`\[(kubelet-check|control-plane-check)\] (.*?)healthy after ([0-9.]+)(ms|s)`)

// stampedLine matches a line of the stamped output: seconds since start,
// then the text.
var stampedLine = regexp.MustCompile(`(?m)^ *([0-9.]+)s (.*)$`)

// once starts a fresh node, runs init with bin, and removes the node.
func once(ctx context.Context, c *testbed.Cluster, bin, version string, rep report) (sample, error) {
	nodes, err := c.Up(ctx, "node1")
	if err != nil {
		return sample{}, err
	}
	n := nodes[0]
	defer n.Down(ctx)
	if err := n.WriteCNIConfig(); err != nil {
		return sample{}, err
	}
	cfg := filepath.Join(n.Dir, "kubeadm.yaml")
	if err := os.WriteFile(cfg, []byte(testbed.InitConfig(n, version, "")), 0o644); err != nil {
		return sample{}, err
	}
	var out bytes.Buffer
	cmd := n.Command(ctx, bin, "init", "--config", cfg,
		"--ignore-preflight-errors="+strings.Join(testbed.PreflightFindings, ","))
	start := time.Now()
	stamped := &stampWriter{start: start, w: &out}
	cmd.Stdout, cmd.Stderr = stamped, stamped
	err = cmd.Run()
	wall := time.Since(start)
	if rep.verbose {
		os.Stderr.Write(out.Bytes())
	}
	if err != nil {
		return sample{}, fmt.Errorf("init: %w\n%s", err, out.String())
	}
	launches, err := n.KubeletLaunches()
	if err != nil {
		return sample{}, err
	}
	boot, launched, err := bootTime(out.String(), start, launches)
	if err != nil {
		return sample{}, err
	}
	if rep.timeline {
		ms := append(timeline(n.Dir), milestone{"init: API server healthy", launched.Add(boot)})
		printTimeline(os.Stderr, launched, ms)
	}
	if rep.verbose {
		for _, l := range launches {
			if !l.Before(start) {
				fmt.Fprintf(os.Stderr, "%6.2fs kubelet launched\n", l.Sub(start).Seconds())
			}
		}
	}
	return sample{wall: wall, waited: waited(out.String()), boot: boot}, nil
}

// bootTime is the time between the last kubelet launch before the API
// server was reported healthy and that report, from the stamped output of
// an init started at start; it also returns that launch.
func bootTime(out string, start time.Time, launches []time.Time) (time.Duration, time.Time, error) {
	healthy := time.Time{}
	for _, m := range stampedLine.FindAllStringSubmatch(out, -1) {
		at, err := strconv.ParseFloat(m[1], 64)
		if err == nil && strings.Contains(m[2], "kube-apiserver is healthy after") {
			healthy = start.Add(time.Duration(at * float64(time.Second)))
			break
		}
	}
	if healthy.IsZero() {
		return 0, time.Time{}, fmt.Errorf("init's output lacks the API server's health line")
	}
	var launched time.Time
	for _, l := range launches {
		if !l.Before(start) && l.Before(healthy) {
			launched = l
		}
	}
	if launched.IsZero() {
		return 0, time.Time{}, fmt.Errorf("kubelet.log shows no kubelet launch during init")
	}
	return healthy.Sub(launched), launched, nil
}

// waited adds the kubelet's wait to the longest control-plane wait (the
// components are waited for together).
func waited(out string) time.Duration {
	var kubelet, cp time.Duration
	for _, m := range healthyAfter.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		d := time.Duration(v * float64(time.Second))
		if m[4] == "ms" {
			d = time.Duration(v * float64(time.Millisecond))
		}
		if m[1] == "kubelet-check" {
			kubelet = d
		} else if d > cp {
			cp = d
		}
	}
	return kubelet + cp
}

func median(s []sample) sample {
	med := func(get func(sample) time.Duration) time.Duration {
		v := make([]time.Duration, len(s))
		for i, x := range s {
			v[i] = get(x)
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return v[len(v)/2]
	}
	return sample{
		wall:   med(func(x sample) time.Duration { return x.wall }),
		waited: med(func(x sample) time.Duration { return x.waited }),
		boot:   med(func(x sample) time.Duration { return x.boot }),
		// Of each run's own difference: the medians of wall and boot
		// may come from different runs.
		above: med(func(x sample) time.Duration { return x.wall - x.boot }),
	}
}

// stampWriter prefixes every line with the time since start, so the
// verbose output shows where init spends its time.
type stampWriter struct {
	start   time.Time
	w       io.Writer
	midLine bool
}

func (s *stampWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !s.midLine {
			fmt.Fprintf(s.w, "%6.2fs ", time.Since(s.start).Seconds())
		}
		s.w.Write(line)
		s.midLine = line[len(line)-1] != '\n'
	}
	return len(p), nil
}
