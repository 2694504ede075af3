// Command benchoffline runs the offline init phases (certs all, kubeconfig
// all, etcd local, control-plane all) with our kubeadm and upstream's side
// by side, several rounds interleaved, each in a fresh --rootfs folder, and
// prints median wall time, CPU time and peak memory of the four
// invocations for both, and their ratios.
//
// Both binaries are first copied, the same way, into one fresh folder and
// run from there. How a file came into the page cache decides how much of
// it each page fault maps: a binary the Go linker has just written maps in
// larger pieces than a copied one, which makes its peak RSS ~8 MiB higher
// and its start-up faster than the same bytes copied. Copying both keeps
// the comparison about the programs.
//
//	go run ./hack/benchoffline -ours bin/kubeadm -upstream .cache/upstream/v1.36.3/kubeadm -rounds 7
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

var phases = [][]string{
	{"init", "phase", "certs", "all"},
	{"init", "phase", "kubeconfig", "all"},
	{"init", "phase", "etcd", "local"},
	{"init", "phase", "control-plane", "all"},
}

type sample struct {
	wall, cpu time.Duration
	maxRSSKiB int64
}

func main() {
	ours := flag.String("ours", "bin/kubeadm", "our kubeadm binary")
	upstream := flag.String("upstream", ".cache/upstream/v1.36.3/kubeadm", "upstream kubeadm binary")
	cfg := flag.String("config", "hack/benchoffline/config.yaml", "configuration file")
	rounds := flag.Int("rounds", 7, "rounds per binary")
	flag.Parse()
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
	for r := 0; r < rounds; r++ {
		// Alternate which binary goes first so neither always meets a
		// warmer page cache.
		order := []string{"ours", "upstream"}
		if r%2 == 1 {
			order = []string{"upstream", "ours"}
		}
		for _, name := range order {
			s, err := once(bins[name], cfgData)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			results[name] = append(results[name], s)
		}
	}
	o, u := median(results["ours"]), median(results["upstream"])
	fmt.Printf("offline phases (certs all + kubeconfig all + etcd local + control-plane all), %d rounds, medians:\n", rounds)
	fmt.Printf("  %-9s wall %7.3fs  cpu %7.3fs  peak RSS %6.1f MiB\n", "ours", o.wall.Seconds(), o.cpu.Seconds(), float64(o.maxRSSKiB)/1024)
	fmt.Printf("  %-9s wall %7.3fs  cpu %7.3fs  peak RSS %6.1f MiB\n", "upstream", u.wall.Seconds(), u.cpu.Seconds(), float64(u.maxRSSKiB)/1024)
	fmt.Printf("  speed-up: wall %.2fx, cpu %.2fx; memory ours/upstream %.2f\n",
		u.wall.Seconds()/o.wall.Seconds(), u.cpu.Seconds()/o.cpu.Seconds(), float64(o.maxRSSKiB)/float64(u.maxRSSKiB))
	return nil
}

// once runs the four phases in a fresh root and sums their costs; the peak
// memory is the largest of the four processes.
func once(bin string, cfg []byte) (sample, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return sample{}, err
	}
	root, err := os.MkdirTemp("", "kubeadm-bench-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(root)
	if err := os.WriteFile(filepath.Join(root, "config.yaml"), cfg, 0o600); err != nil {
		return sample{}, err
	}
	var total sample
	for _, p := range phases {
		args := append(append([]string{}, p...), "--config", "/config.yaml", "--rootfs", root)
		cmd := exec.Command(abs, args...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil {
			return sample{}, fmt.Errorf("%v: %w\n%s", args, err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		total.wall += wall
		total.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru.Maxrss > total.maxRSSKiB {
			total.maxRSSKiB = ru.Maxrss
		}
	}
	return total, nil
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
