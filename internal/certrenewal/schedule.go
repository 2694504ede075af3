package certrenewal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// Names and places of the renewal's files. Upstream kubeadm installs none
// of them (docs/user-guide.md lists them among the deviations).
const (
	// UnitName names the systemd service and timer, and the OpenRC
	// periodic script.
	UnitName = "kubeadm-certs-renewal"
	// SystemdDir is where the administrator's systemd units live.
	SystemdDir = "/etc/systemd/system"
	// PeriodicDir is where OpenRC hosts (Alpine) keep the scripts crond
	// runs every day.
	PeriodicDir = "/etc/periodic/daily"
	// StatusPath is where each run records what it did.
	StatusPath = "/var/lib/kubeadm/certs-renewal.json"
	// RenewCommand is the kubeadm command the schedule runs.
	RenewCommand = "certs renew expiring"
	// RandomDelay spreads the daily runs of the control-plane nodes over
	// the day's first hours, so they do not restart their components at
	// the same time.
	RandomDelay = 6 * time.Hour
)

// File is one file of the schedule.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Schedule installs, enables and removes the files that make the host's
// init system run the renewal every day. Every side effect goes through
// Host (the init system's commands) and Root (a prefix of every path, ""
// for the real root).
type Schedule struct {
	Host kubelet.Host
	Root string
	// Out receives progress lines and warnings.
	Out io.Writer
}

// InitSystem is the init system the schedule is for: OpenRC where it
// runs, else systemd (also where none runs, so that a node prepared
// before its init system started gets the usual units).
func (s Schedule) InitSystem() kubelet.InitSystem {
	if kubelet.NewService(s.Host, io.Discard).InitSystem() == kubelet.OpenRC {
		return kubelet.OpenRC
	}
	return kubelet.Systemd
}

// Files returns the schedule's files for the init system is, running the
// kubeadm binary at kubeadm, at their real paths.
func Files(is kubelet.InitSystem, kubeadm string) []File {
	if is == kubelet.OpenRC {
		script := fmt.Sprintf(`#!/bin/sh
# Written by kubeadm: renews, once a day, the certificates of this
# control-plane node that expire within 90 days, and restarts the
# components that use them. "kubeadm reset" removes this file.
sleep "$(awk -v max=%d 'BEGIN { srand(); print int(rand() * max) }')"
exec %s %s >>/var/log/%s.log 2>&1
`, int(RandomDelay/time.Second), kubeadm, RenewCommand, UnitName)
		return []File{{Path: filepath.Join(PeriodicDir, UnitName), Data: []byte(script), Mode: 0o755}}
	}
	service := fmt.Sprintf(`# Written by kubeadm; "kubeadm reset" removes it.
[Unit]
Description=Renew the kubeadm certificates of this node that expire soon
After=kubelet.service
ConditionPathExists=/etc/kubernetes/manifests/kube-apiserver.yaml

[Service]
Type=oneshot
ExecStart=%s %s
`, kubeadm, RenewCommand)
	timer := fmt.Sprintf(`# Written by kubeadm; "kubeadm reset" removes it.
[Unit]
Description=Daily renewal of the kubeadm certificates of this node that expire soon

[Timer]
OnCalendar=daily
RandomizedDelaySec=%d
Persistent=true

[Install]
WantedBy=timers.target
`, int(RandomDelay/time.Second))
	return []File{
		{Path: filepath.Join(SystemdDir, UnitName+".service"), Data: []byte(service), Mode: 0o644},
		{Path: filepath.Join(SystemdDir, UnitName+".timer"), Data: []byte(timer), Mode: 0o644},
	}
}

// RealPath returns where a file of the schedule written flat into a
// dry-run folder goes on a real run (false: name is not one of them).
func RealPath(name string) (string, bool) {
	for _, is := range []kubelet.InitSystem{kubelet.Systemd, kubelet.OpenRC} {
		for _, f := range Files(is, "kubeadm") {
			if filepath.Base(f.Path) == name {
				return f.Path, true
			}
		}
	}
	return "", false
}

func (s Schedule) path(p string) string { return filepath.Join(s.Root, p) }

// Write writes the schedule's files for the host's init system, each
// atomically; with dir set (a dry run) into that folder, flat, and the
// init system is not asked to do anything. Writing is idempotent.
func (s Schedule) Write(kubeadm, dir string) ([]File, error) {
	files := Files(s.InitSystem(), kubeadm)
	for _, f := range files {
		target := s.path(f.Path)
		if dir != "" {
			target = filepath.Join(dir, filepath.Base(f.Path))
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, fmt.Errorf("making the folder of %s: %w", target, err)
		}
		if err := atomicfile.Write(target, f.Data, f.Mode); err != nil {
			return nil, fmt.Errorf("writing %s: %w", target, err)
		}
	}
	return files, nil
}

// Enable has the init system run the schedule: systemd reloads its units
// and enables and starts the timer; on OpenRC crond, which runs the daily
// scripts, is added to the default runlevel and started. It never fails:
// what cannot be done is a warning, since the files are in place and the
// administrator can enable them by hand.
func (s Schedule) Enable(ctx context.Context) {
	var cmds [][]string
	switch kubelet.NewService(s.Host, io.Discard).InitSystem() {
	case kubelet.Systemd:
		cmds = [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "enable", "--now", UnitName + ".timer"}}
	case kubelet.OpenRC:
		cmds = [][]string{{"rc-update", "add", "crond", "default"}, {"rc-service", "crond", "start"}}
	default:
		fmt.Fprintf(s.Out, "[certs-renewal] WARNING: no supported init system (systemd or OpenRC) runs, so the daily renewal is not enabled; enable %s.timer (or crond) once it does\n", UnitName)
		return
	}
	for _, c := range cmds {
		if err := run(ctx, s.Host, c); err != nil {
			fmt.Fprintf(s.Out, "[certs-renewal] WARNING: the daily renewal could not be enabled: %v\n", err)
			return
		}
	}
}

// Remove disables the schedule and deletes its files (of either init
// system). Removing an absent schedule is fine. Disabling is best effort
// (a warning); a file that cannot be deleted is an error.
func (s Schedule) Remove(ctx context.Context) error {
	systemd := kubelet.NewService(s.Host, io.Discard).InitSystem() == kubelet.Systemd
	timer := s.path(filepath.Join(SystemdDir, UnitName+".timer"))
	if _, err := os.Stat(timer); err == nil && systemd {
		if err := run(ctx, s.Host, []string{"systemctl", "disable", "--now", UnitName + ".timer"}); err != nil {
			fmt.Fprintf(s.Out, "[reset] WARNING: the certificate renewal timer could not be disabled: %v\n", err)
		}
	}
	var errs []error
	removed := false
	for _, is := range []kubelet.InitSystem{kubelet.Systemd, kubelet.OpenRC} {
		for _, f := range Files(is, "kubeadm") {
			err := os.Remove(s.path(f.Path))
			switch {
			case err == nil:
				removed = true
			case !errors.Is(err, fs.ErrNotExist):
				errs = append(errs, err)
			}
		}
	}
	for _, p := range []string{StatusPath, StatusPath + ".lock"} {
		if err := os.Remove(s.path(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if removed && systemd {
		if err := run(ctx, s.Host, []string{"systemctl", "daemon-reload"}); err != nil {
			fmt.Fprintf(s.Out, "[reset] WARNING: %v\n", err)
		}
	}
	return errors.Join(errs...)
}

// Installed returns the schedule's files present on the host (none: the
// renewal is not installed).
func (s Schedule) Installed() []string {
	var out []string
	for _, is := range []kubelet.InitSystem{kubelet.Systemd, kubelet.OpenRC} {
		for _, f := range Files(is, "kubeadm") {
			if _, err := os.Stat(s.path(f.Path)); err == nil {
				out = append(out, f.Path)
			}
		}
	}
	return out
}

// Enabled asks systemd whether the timer is enabled; true where it cannot
// tell (OpenRC, whose crond runs every daily script).
func (s Schedule) Enabled(ctx context.Context) bool {
	if kubelet.NewService(s.Host, io.Discard).InitSystem() != kubelet.Systemd {
		return true
	}
	_, err := s.Host.Run(ctx, "systemctl", "is-enabled", UnitName+".timer")
	return err == nil
}

// run runs a command of the init system, its output in the error.
func run(ctx context.Context, h kubelet.Host, argv []string) error {
	return kubelet.Command(ctx, h, argv[0], argv[1:]...)
}

// KubeadmPath is the kubeadm binary the schedule runs: the one on PATH
// when it is this very program (a stable path such as /usr/bin/kubeadm,
// which upgrades of the package replace), else this program's own path.
func KubeadmPath() string {
	self, err := os.Executable()
	if err != nil {
		return "/usr/bin/kubeadm"
	}
	if onPath, err := exec.LookPath("kubeadm"); err == nil {
		a, aerr := os.Stat(onPath)
		b, berr := os.Stat(self)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			if abs, err := filepath.Abs(onPath); err == nil {
				return abs
			}
		}
	}
	return self
}

// Install writes the schedule's files and enables them. Under a dry run
// (dryRunDir set) the files go into that folder, where the dry run's
// listing shows them, and the init system is left alone. It is
// idempotent.
func (s Schedule) Install(ctx context.Context, kubeadm, dryRunDir string) error {
	files, err := s.Write(kubeadm, dryRunDir)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(s.Out, "[certs-renewal] Writing %q\n", f.Path)
	}
	if dryRunDir != "" {
		fmt.Fprintf(s.Out, "[dryrun] Would enable the daily run of %q through the init system\n", kubeadm+" "+RenewCommand)
		return nil
	}
	s.Enable(ctx)
	fmt.Fprintf(s.Out, "[certs-renewal] Every day, %q renews the certificates that expire within %v and restarts what uses them\n", kubeadm+" "+RenewCommand, DefaultWindow)
	return nil
}
