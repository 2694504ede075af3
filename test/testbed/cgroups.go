package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupHierarchies lists the mounted hierarchies: each cgroup v1
// controller folder (named ones included) and the v2 one, if any. Folders
// that are symlinks to others (cpu -> cpu,cpuacct) are skipped.
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return nil, fmt.Errorf("listing cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(cgroupRoot, e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		// A pure cgroup v2 host has the root itself.
		if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.procs")); err == nil {
			out = append(out, cgroupRoot)
		}
	}
	return out, nil
}

// ensureCgroup creates the cgroup /name in every hierarchy; in the cpuset
// one it copies the root's CPUs and memory nodes, as a new cpuset starts
// with none and no process could join it.
func ensureCgroup(name string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return fmt.Errorf("reading %s: %w", filepath.Join(h, f), err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("writing %s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// joinCgroup moves the process pid into /name in every hierarchy.
func joinCgroup(name string, pid int) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		p := filepath.Join(h, name, "cgroup.procs")
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving process %d into %s: %w", pid, p, err)
		}
	}
	return nil
}

// cgroupProcs lists every process in /name and below, in any hierarchy.
func cgroupProcs(name string) ([]int, error) {
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range hs {
		root := filepath.Join(h, name)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil // the cgroup went away meanwhile
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	return pids, nil
}

// removeCgroup kills whatever still runs in /name and below, then removes
// those cgroups, deepest first, in every hierarchy. A missing cgroup is
// fine.
func removeCgroup(name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := cgroupProcs(name)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v in cgroup %s do not end", pids, name)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, name), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		// Deepest first: longer paths come after their parents.
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := removeCgroupDir(d, deadline); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupDir removes one empty cgroup, retrying while the kernel
// still counts exiting processes in it.
func removeCgroupDir(dir string, deadline time.Time) error {
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
