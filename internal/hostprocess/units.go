package hostprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// UnitMode is the mode of a unit file: it holds no secret, and systemd
// warns about units others may write.
const UnitMode os.FileMode = 0o644

// Units drives the units of a node through systemctl. Every method
// inspects the unit files first, so each can run any number of times.
type Units struct {
	Host kubelet.Runner
	// Root prefixes UnitDir ("" is /); systemctl is told unit names only.
	Root string
	// Out receives progress lines.
	Out io.Writer
	// ProcDir is where the processes' command lines are read ("":
	// /proc).
	ProcDir string
}

// Write writes component's unit when its content differs from data and
// reports whether it did. A unit file in the way that kubeadm did not
// write is an error (preflight reports it first).
func (u Units) Write(component string, data []byte) (changed bool, err error) {
	p := UnitPath(u.Root, component)
	old, err := boundedread.ReadFile(p, boundedread.MaxFile)
	switch {
	case err == nil && bytes.Equal(old, data):
		return false, nil
	case err == nil && !Ours(old):
		return false, fmt.Errorf("%s exists and was not written by kubeadm: remove it, or move it aside, first", p)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("reading the unit %s: %w", p, err)
	}
	if err := os.MkdirAll(UnitPath(u.Root, ""), 0o755); err != nil {
		return false, fmt.Errorf("creating the unit folder: %w", err)
	}
	if err := atomicfile.Write(p, data, UnitMode); err != nil {
		return false, fmt.Errorf("writing the unit %s: %w", p, err)
	}
	return true, nil
}

// Start makes systemd run component's unit: it reloads the units when
// changed, enables it (so the node's boot starts it) and restarts it when
// changed, else starts it (nothing happens to a unit that runs).
func (u Units) Start(ctx context.Context, component string, changed bool) error {
	unit := UnitName(component)
	if changed {
		if err := u.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	if err := u.systemctl(ctx, "enable", unit); err != nil {
		return err
	}
	verb := "start"
	if changed {
		verb = "restart"
	}
	return u.systemctl(ctx, verb, unit)
}

// Restart restarts component's running unit (a stopped one starts).
func (u Units) Restart(ctx context.Context, component string) error {
	return u.systemctl(ctx, "restart", UnitName(component))
}

// Installed lists the components that have a unit kubeadm wrote, in start
// order.
func (u Units) Installed() ([]string, error) {
	var found []string
	for _, c := range Components() {
		data, err := boundedread.ReadFile(UnitPath(u.Root, c), boundedread.MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return found, fmt.Errorf("reading the unit of %s: %w", c, err)
		}
		if Ours(data) {
			found = append(found, c)
		}
	}
	return found, nil
}

// Remove stops, disables and deletes every unit kubeadm wrote, the
// scheduler first and etcd last, then reloads systemd. It goes on past
// failures and returns them all; a unit that could not be stopped is
// kept, so that running Remove again tries again.
func (u Units) Remove(ctx context.Context) error {
	comps, err := u.Installed()
	if err != nil {
		return err
	}
	var errs []error
	removed := false
	for _, c := range slices.Backward(comps) {
		unit := UnitName(c)
		fmt.Fprintf(u.Out, "[reset] Stopping and removing the %s unit\n", unit)
		if err := u.systemctl(ctx, "stop", unit); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := u.systemctl(ctx, "disable", unit); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(UnitPath(u.Root, c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = true
	}
	if removed {
		if err := u.systemctl(ctx, "daemon-reload"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Service is what systemd tells of a component's unit.
type Service struct {
	// PID is its main process (0 when none runs), Argv that process's
	// command line.
	PID  int
	Argv []string
	// Restarts counts systemd's automatic restarts of the unit since it
	// was last started by hand (NRestarts, which a restart sets back to
	// 0); -1 when systemd does not tell (before v235).
	Restarts int
}

// Running tells which process systemd runs for component's unit (its
// MainPID) with its command line, and how often systemd restarted it.
// An upgrade compares the command line with the unit to tell a unit
// written but not yet restarted from one that runs, and the restarts to
// tell a crash loop.
func (u Units) Running(ctx context.Context, component string) (Service, error) {
	unit := UnitName(component)
	out, err := u.Host.Run(ctx, "systemctl", "show", "--property=MainPID,NRestarts", unit)
	if err != nil {
		return Service{}, fmt.Errorf("systemctl show %s: %w: %s", unit, err, strings.Join(strings.Fields(string(out)), " "))
	}
	st := Service{PID: -1, Restarts: -1}
	for _, l := range strings.Split(string(out), "\n") {
		key, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			n = -1
		}
		switch key {
		case "MainPID":
			st.PID = n
		case "NRestarts":
			st.Restarts = n
		}
	}
	if st.PID < 0 {
		return Service{}, fmt.Errorf("systemctl show %s gave no MainPID: %q", unit, strings.TrimSpace(string(out)))
	}
	if st.PID == 0 {
		return st, nil
	}
	proc := u.ProcDir
	if proc == "" {
		proc = "/proc"
	}
	data, err := boundedread.ReadFile(filepath.Join(proc, strconv.Itoa(st.PID), "cmdline"), boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		st.PID = 0 // it has just exited
		return st, nil
	}
	if err != nil {
		return Service{}, fmt.Errorf("reading the command line of %s: %w", unit, err)
	}
	st.Argv = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	return st, nil
}

// Stop stops component's unit.
func (u Units) Stop(ctx context.Context, component string) error {
	return u.systemctl(ctx, "stop", UnitName(component))
}

// systemctl runs systemctl, its output folded into the error.
func (u Units) systemctl(ctx context.Context, args ...string) error {
	return kubelet.Command(ctx, u.Host, "systemctl", args...)
}
