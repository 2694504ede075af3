// Command benchoffline runs the offline init phases (certs all, kubeconfig
// all, etcd local, control-plane all) with our kubeadm and upstream's side
// by side, several rounds interleaved, each in a fresh --rootfs folder, and
// prints median wall time, CPU time and peak memory of the four
// invocations for both, and their ratios (with how far the wall speed-up
// moves when the rounds are drawn again: see speedUpInterval), then the
// medians of each invocation alone.
//
// After each round it also measures the machine itself (see probe and
// ceiling): how long a bare Go program takes to make the same RSA-2048
// keys, phase by phase on both cores. The VM's speed, and how much its
// second core adds, change from minute to minute; the estimate of what two
// cores allow, printed last, puts the speed-up of that run in proportion.
//
// Both binaries are first copied, the same way, into one fresh folder and
// run from there. How a file came into the page cache decides how much of
// it each page fault maps: a binary the Go linker has just written maps in
// larger pieces than a copied one, which makes its peak RSS ~8 MiB higher
// and its start-up faster than the same bytes copied. Copying both keeps
// the comparison about the programs.
//
//	go run ./hack/benchoffline -ours bin/kubeadm -upstream .cache/upstream/v1.37.2/kubeadm -rounds 7
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

var phases = [][]string{
	{"init", "phase", "certs", "all"},
	{"init", "phase", "kubeconfig", "all"},
	{"init", "phase", "etcd", "local"},
	{"init", "phase", "control-plane", "all"},
}

// makesKeys tells, for each of phases, whether it makes keys.
var makesKeys = []bool{true, true, false, false}

type sample struct {
	wall, cpu time.Duration
	maxRSSKiB int64
}

// roundResult is one round of one binary: the four invocations summed, and
// each one.
type roundResult struct {
	total sample
	each  []sample
}

func main() {
	ours := flag.String("ours", "bin/kubeadm", "our kubeadm binary")
	upstream := flag.String("upstream", ".cache/upstream/v1.37.2/kubeadm", "upstream kubeadm binary")
	cfg := flag.String("config", "hack/benchoffline/config.yaml", "configuration file")
	rounds := flag.Int("rounds", 7, "rounds per binary")
	keys := flag.Int(keysFlag, 0, "(internal) only make this many RSA-2048 keys at once and exit")
	flag.Parse()
	if *keys > 0 {
		makeKeys(*keys)
		return
	}
	if err := run(*ours, *upstream, *cfg, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "benchoffline:", err)
		os.Exit(1)
	}
}

func run(ours, upstream, cfg string, rounds int) error {
	cfgData, err := os.ReadFile(cfg)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubeadm-bench-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{}
	for name, src := range map[string]string{"ours": ours, "upstream": upstream} {
		if bins[name], err = copyBinary(src, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	results := map[string][]sample{}
	each := map[string][][]sample{} // binary, phase, round
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var probes []sample
	for r := 0; r < rounds; r++ {
		// Alternate which binary goes first so neither always meets a
		// warmer page cache.
		order := []string{"ours", "upstream"}
		if r%2 == 1 {
			order = []string{"upstream", "ours"}
		}
		for _, name := range order {
			rr, err := once(bins[name], cfgData)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			results[name] = append(results[name], rr.total)
			if each[name] == nil {
				each[name] = make([][]sample, len(phases))
			}
			for i, s := range rr.each {
				each[name][i] = append(each[name][i], s)
			}
		}
		p, err := probe(self)
		if err != nil {
			return err
		}
		probes = append(probes, p)
	}
	o, u := median(results["ours"]), median(results["upstream"])
	fmt.Printf("offline phases (certs all + kubeconfig all + etcd local + control-plane all), %d rounds, medians:\n", rounds)
	fmt.Printf("  %-9s wall %7.3fs  cpu %7.3fs  peak RSS %6.1f MiB\n", "ours", o.wall.Seconds(), o.cpu.Seconds(), float64(o.maxRSSKiB)/1024)
	fmt.Printf("  %-9s wall %7.3fs  cpu %7.3fs  peak RSS %6.1f MiB\n", "upstream", u.wall.Seconds(), u.cpu.Seconds(), float64(u.maxRSSKiB)/1024)
	fmt.Printf("  speed-up: wall %.2fx, cpu %.2fx; memory ours/upstream %.2f\n",
		u.wall.Seconds()/o.wall.Seconds(), u.cpu.Seconds()/o.cpu.Seconds(), float64(o.maxRSSKiB)/float64(u.maxRSSKiB))
	lo, hi := speedUpInterval(results["ours"], results["upstream"])
	fmt.Printf("  the rounds drawn again %d times: wall speed-up %.2f–%.2fx for 95 %% of the draws\n", redraws, lo, hi)
	fmt.Println("each invocation, medians of wall / CPU (ms):")
	var oursNoKeys time.Duration
	for i, p := range phases {
		o, u := median(each["ours"][i]), median(each["upstream"][i])
		fmt.Printf("  %-26s ours %4d / %4d  upstream %4d / %4d  wall %.2fx\n", strings.Join(p[2:], " "),
			o.wall.Milliseconds(), o.cpu.Milliseconds(), u.wall.Milliseconds(), u.cpu.Milliseconds(),
			u.wall.Seconds()/o.wall.Seconds())
		if !makesKeys[i] {
			oursNoKeys += o.wall
		}
	}
	// The machine's own bound in this run (see ceiling).
	keys := median(probes)
	best := ceiling(u.wall, keys.wall, oursNoKeys)
	fmt.Printf("this machine, this run: a bare Go program makes the same keys, phase by phase on both cores, in %d ms (median; CPU %d ms);\n",
		keys.wall.Milliseconds(), keys.cpu.Milliseconds())
	fmt.Printf("  with ours' start-ups two cores allow ≈ %.2fx; ours reached %.0f %% of that\n", best, 100*u.wall.Seconds()/o.wall.Seconds()/best)
	return nil
}

// once runs the four phases in a fresh root and sums their costs; the peak
// memory is the largest of the four processes.
func once(bin string, cfg []byte) (roundResult, error) {
	var rr roundResult
	abs, err := filepath.Abs(bin)
	if err != nil {
		return rr, err
	}
	root, err := os.MkdirTemp("", "kubeadm-bench-")
	if err != nil {
		return rr, err
	}
	defer os.RemoveAll(root)
	if err := os.WriteFile(filepath.Join(root, "config.yaml"), cfg, 0o600); err != nil {
		return rr, err
	}
	total := &rr.total
	for _, p := range phases {
		args := append(append([]string{}, p...), "--config", "/config.yaml", "--rootfs", root)
		cmd := exec.Command(abs, args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil {
			return rr, fmt.Errorf("%v: %w\n%s", args, err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		s := sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), maxRSSKiB: ru.Maxrss}
		rr.each = append(rr.each, s)
		total.wall += s.wall
		total.cpu += s.cpu
		total.maxRSSKiB = max(total.maxRSSKiB, s.maxRSSKiB)
	}
	return rr, nil
}

func median(s []sample) sample {
	pick := func(less func(a, b sample) bool) sample {
		c := append([]sample(nil), s...)
		sort.Slice(c, func(i, j int) bool { return less(c[i], c[j]) })
		return c[len(c)/2]
	}
	return sample{
		wall:      pick(func(a, b sample) bool { return a.wall < b.wall }).wall,
		cpu:       pick(func(a, b sample) bool { return a.cpu < b.cpu }).cpu,
		maxRSSKiB: pick(func(a, b sample) bool { return a.maxRSSKiB < b.maxRSSKiB }).maxRSSKiB,
	}
}

// copyBinary copies the executable src to dst with plain reads and writes
// and returns dst. It streams: the children's peak RSS includes what this
// process holds when it forks them.
func copyBinary(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}
