package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/leaderlease"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Unit is the new systemd unit of one component of a control plane of
// host processes.
type Unit struct {
	Component string
	Data      []byte
	// HealthURL is the endpoint the component answers when healthy (the
	// one its static Pod's probes would ask).
	HealthURL string
	// Before runs just before the unit is written (certificate renewal);
	// it is not run for a unit that does not change.
	Before func() error
}

// HostUnits replaces the units of a control plane of host processes on
// one node, one component at a time, with the guarantees of StaticPods:
// each old unit is copied to BackupDir, the new one written and its
// service restarted, and the process watched until it runs the new
// command line and answers its health endpoint (and, for the controller
// manager and the scheduler, until their Lease is renewed after the
// restart, when Leaders is set); after etcd, this node's
// API server must serve again before the next component goes down. When
// one component does not come up, every unit changed so far is restored
// byte for byte (newest first), restarted and waited for.
//
// Idempotent by inspection: a unit that already holds the new bytes and
// whose process runs its command line is left alone; one written by an
// earlier run that stopped before restarting it is restarted.
type HostUnits struct {
	Units     hostprocess.Units
	BackupDir string
	// Timeout bounds the wait for each component (timeouts.upgradeManifests).
	Timeout time.Duration
	// Healthy asks a health endpoint; nil: staticpod.Probe.
	Healthy func(ctx context.Context, url string) error
	// Interval separates two looks at the service (0: 500ms).
	Interval time.Duration
	// EtcdData, when set, is the copy of etcd's data taken before its
	// unit changed: a rollback that restores etcd's unit puts it back
	// when EtcdData.RestoreDue says so, with etcd stopped.
	EtcdData *EtcdData
	// RestartKubelet, when set, restarts this node's kubelet after
	// etcd's data was put back (see Rollback).
	RestartKubelet func(ctx context.Context)
	// Leaders, when set, waits after the restart of the controller
	// manager or the scheduler, and at the end of a rollback that put
	// etcd's data back or restarted one of them, until each of this
	// node's leader-electing components leads again (see Leaders): the
	// control plane works when Apply or Rollback returns.
	Leaders *leaderlease.Waiter
	Out     io.Writer

	changed     []changedUnit
	urls        map[string]string // component → HealthURL, of Apply's units
	probeClient *http.Client
}

type changedUnit struct {
	component, url string
	old            []byte
}

// Apply upgrades the components of units in their order. It returns a
// *ComponentError when a component did not come up (after the rollback).
func (s *HostUnits) Apply(ctx context.Context, units []Unit) error {
	apiServerURL := ""
	s.urls = map[string]string{}
	for _, u := range units {
		s.urls[u.Component] = u.HealthURL
		if u.Component == hostprocess.KubeAPIServer {
			apiServerURL = u.HealthURL
		}
	}
	for _, u := range units {
		err := s.apply(ctx, u)
		if err == nil && u.Component == hostprocess.Etcd && apiServerURL != "" {
			err = s.waitAPIServerServes(ctx, apiServerURL)
		}
		if err != nil {
			ce := &ComponentError{Component: u.Component, Err: err, Units: true}
			ce.RollbackErr = s.Rollback(ctx, u.Component)
			return ce
		}
	}
	return nil
}

// Changed lists the components whose unit Apply replaced.
func (s *HostUnits) Changed() []string {
	var out []string
	for _, c := range s.changed {
		out = append(out, c.component)
	}
	return out
}

func (s *HostUnits) apply(ctx context.Context, u Unit) error {
	path := hostprocess.UnitPath(s.Units.Root, u.Component)
	unit := hostprocess.UnitName(u.Component)
	want, err := unitArgv(path, u.Data, u.Component)
	if err != nil {
		return err
	}
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return fmt.Errorf("reading the current unit: %w", err)
	}
	if !hostprocess.Ours(old) {
		return fmt.Errorf("%s was not written by kubeadm", path)
	}
	if bytes.Equal(old, u.Data) {
		running, err := s.Units.Running(ctx, u.Component)
		if err != nil {
			return err
		}
		if slices.Equal(running.Argv, want) {
			fmt.Fprintf(s.Out, "[upgrade/units] The unit of %q is already up to date and its process runs it; it is left running\n", u.Component)
			return nil
		}
		// An earlier run wrote the unit and stopped before the restart:
		// there is no older unit to go back to from here.
		fmt.Fprintf(s.Out, "[upgrade/units] The unit %s is up to date but its process does not run it yet: restarting it\n", unit)
		start := time.Now()
		if err := s.Units.Start(ctx, u.Component, true); err != nil {
			return err
		}
		if err := s.waitRunning(ctx, u.Component, want, u.HealthURL); err != nil {
			return err
		}
		return s.Leaders.WaitRestarted(ctx, u.Component, want, start)
	}
	fmt.Fprintf(s.Out, "[upgrade/units] Preparing the upgrade of %q\n", u.Component)
	if err := os.MkdirAll(s.BackupDir, 0o700); err != nil {
		return fmt.Errorf("making the backup folder: %w", err)
	}
	backup := filepath.Join(s.BackupDir, unit)
	if err := atomicfile.Write(backup, old, hostprocess.UnitMode); err != nil {
		return fmt.Errorf("backing up the current unit: %w", err)
	}
	if u.Before != nil {
		if err := u.Before(); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.Out, "[upgrade/units] Writing the new unit to %q; the previous one is kept in %q\n", path, backup)
	s.changed = append(s.changed, changedUnit{component: u.Component, url: u.HealthURL, old: old})
	if _, err := s.Units.Write(u.Component, u.Data); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "[upgrade/units] Restarting %s and waiting up to %v for it to answer as healthy\n", unit, s.Timeout)
	start := time.Now()
	if err := s.Units.Start(ctx, u.Component, true); err != nil {
		return err
	}
	if err := s.waitRunning(ctx, u.Component, want, u.HealthURL); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "[upgrade/units] %q upgraded and healthy after %v\n", u.Component, time.Since(start).Round(100*time.Millisecond))
	return s.Leaders.WaitRestarted(ctx, u.Component, want, start)
}

// unitArgv is the command line a unit's content runs.
func unitArgv(path string, data []byte, component string) ([]string, error) {
	pod, ours, err := hostprocess.ParseUnit(path, data, component)
	if err != nil {
		return nil, err
	}
	if !ours {
		return nil, fmt.Errorf("the unit for %s lacks kubeadm's marker", component)
	}
	return pod.Spec.Containers[0].Command, nil
}

// waitAPIServerServes waits, after etcd was restarted, until this node's
// API server is ready again (see StaticPods.waitAPIServerServes).
func (s *HostUnits) waitAPIServerServes(ctx context.Context, url string) error {
	return waitServes(ctx, s.Out, "units", url, s.Timeout, s.interval(), s.healthy)
}

func (s *HostUnits) interval() time.Duration { return pollInterval(s.Interval) }

// Rollback restores every unit Apply replaced, newest first, restarts
// each, then waits for those components to be healthy again. failed
// names the component whose own upgrade failed. etcd's data is put back
// when EtcdData.RestoreDue says so: etcd is stopped first, and its
// previous unit starts on the copy. After a restore, this node's units
// the rollback did not touch and its kubelet are restarted too
// (restartOthers).
func (s *HostUnits) Rollback(ctx context.Context, failed string) error {
	var errs []error
	var waits []changedUnit
	restored := false
	for _, c := range slices.Backward(s.changed) {
		path := hostprocess.UnitPath(s.Units.Root, c.component)
		if cur, err := boundedread.ReadFile(path, boundedread.MaxFile); err == nil && bytes.Equal(cur, c.old) {
			continue // the new unit never reached the disk
		}
		fmt.Fprintf(s.Out, "[upgrade/units] Restoring the previous unit of %q\n", c.component)
		restore, err := s.EtcdData.dueFor(c.component, failed)
		if err != nil {
			errs = append(errs, err)
		}
		if restore {
			if err := s.Units.Stop(ctx, c.component); err != nil {
				// Copying data under a running etcd would be worse
				// than keeping the new data.
				errs = append(errs, fmt.Errorf("stopping %s to put its data back: %w", c.component, err))
				restore = false
			}
		}
		if _, err := s.Units.Write(c.component, c.old); err != nil {
			errs = append(errs, fmt.Errorf("restoring the unit of %s: %w", c.component, err))
			continue
		}
		if restore {
			if err := s.EtcdData.Restore(); err != nil {
				errs = append(errs, err)
			} else {
				restored = true
			}
		}
		if err := s.Units.Start(ctx, c.component, true); err != nil {
			errs = append(errs, err)
			continue
		}
		waits = append(waits, c)
	}
	for _, c := range waits {
		argv, err := unitArgv(hostprocess.UnitPath(s.Units.Root, c.component), c.old, c.component)
		if err == nil {
			err = s.waitRunning(ctx, c.component, argv, c.url)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s did not come back after its unit was restored: %w", c.component, err))
			continue
		}
		fmt.Fprintf(s.Out, "[upgrade/units] %q runs its previous unit again\n", c.component)
	}
	if restored {
		var done []string
		for _, c := range waits {
			done = append(done, c.component)
		}
		if err := s.restartOthers(ctx, done); err != nil {
			errs = append(errs, err)
		}
	}
	if restored || slices.ContainsFunc(waits, func(c changedUnit) bool { return leaderlease.Elects(c.component) }) {
		if err := s.waitLeaders(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.changed = nil
	return errors.Join(errs...)
}

// waitLeaders waits until each of this node's leader-electing components
// (as its unit's command line names its Lease) leads again.
func (s *HostUnits) waitLeaders(ctx context.Context) error {
	if s.Leaders == nil {
		return nil
	}
	installed, err := s.Units.Installed()
	if err != nil {
		return fmt.Errorf("listing this node's units to wait for their leader election: %w", err)
	}
	return s.Leaders.WaitNode(ctx, installed, s.installedArgv)
}

// installedArgv is the command line of component's unit as installed now.
func (s *HostUnits) installedArgv(component string) ([]string, error) {
	path := hostprocess.UnitPath(s.Units.Root, component)
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	return unitArgv(path, data, component)
}

// restartOthers restarts, once etcd's data was put back, this node's
// units that the rollback did not restart (done lists those it did), in
// start order, each waited for, then the kubelet. As etcd's guide to
// restoring a cluster advises: they hold state newer than the restored
// data (watch caches, informers, resource versions, leases) and would
// otherwise act on it or wait for revisions etcd no longer has.
func (s *HostUnits) restartOthers(ctx context.Context, done []string) error {
	installed, err := s.Units.Installed()
	if err != nil {
		return fmt.Errorf("listing this node's units to restart them after etcd's data was put back: %w", err)
	}
	var errs []error
	for _, c := range installed {
		if slices.Contains(done, c) {
			continue
		}
		unit := hostprocess.UnitName(c)
		fmt.Fprintf(s.Out, "[upgrade/units] Restarting %s, which holds state newer than etcd's restored data\n", unit)
		if err := s.Units.Restart(ctx, c); err != nil {
			errs = append(errs, err)
			continue
		}
		argv, err := s.installedArgv(c)
		if err == nil && s.urls[c] != "" {
			err = s.waitRunning(ctx, c, argv, s.urls[c])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s after its restart: %w", c, err))
		}
	}
	if s.RestartKubelet != nil {
		fmt.Fprintf(s.Out, "[upgrade/units] Restarting the kubelet, which holds state newer than etcd's restored data\n")
		s.RestartKubelet(ctx)
	}
	return errors.Join(errs...)
}

// waitRunning waits until systemd runs component with the command line
// want and its health endpoint answers. A process that keeps exiting
// (crashLimit times: the exits seen, or systemd's own count of its
// restarts when it is higher) ends the wait early.
func (s *HostUnits) waitRunning(ctx context.Context, component string, want []string, url string) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	var last error // why the latest try failed
	lastPID, exits := 0, 0
	for {
		st, err := s.Units.Running(ctx, component)
		if err == nil {
			if lastPID != 0 && st.PID != lastPID {
				exits++ // the process seen last has ended
			}
			lastPID = st.PID
			// systemd counts the exits between two looks too.
			exits = max(exits, st.Restarts)
		}
		switch {
		case err != nil:
			last = err
		case exits >= crashLimit:
			return fmt.Errorf("%s exited %d times; read its log with 'journalctl -u %s'", component, exits, hostprocess.UnitName(component))
		case st.Argv == nil:
			last = fmt.Errorf("systemd runs no process for %s", hostprocess.UnitName(component))
		case !slices.Equal(st.Argv, want):
			last = fmt.Errorf("the process of %s runs another command line than its unit's (%s)", hostprocess.UnitName(component), st.Argv[0])
		default:
			if err := s.healthy(ctx, url); err != nil {
				last = fmt.Errorf("%s: %w", url, err)
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not up after %v: %w", s.Timeout, last)
		case <-time.After(s.interval()):
		}
	}
}

func (s *HostUnits) healthy(ctx context.Context, url string) error {
	if s.Healthy != nil {
		return s.Healthy(ctx, url)
	}
	if s.probeClient == nil {
		s.probeClient = staticpod.ProbeClient()
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return staticpod.Probe(ctx, s.probeClient, url)
}
