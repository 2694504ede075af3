package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// InitSystem names the service manager of the host.
type InitSystem string

// The init systems Service knows.
const (
	NoInitSystem InitSystem = ""
	Systemd      InitSystem = "systemd"
	OpenRC       InitSystem = "openrc"
)

// Paths whose presence tells which init system runs the host: systemd
// creates the first when it boots the machine (what sd_booted checks),
// OpenRC the second.
const (
	systemdRunDir = "/run/systemd/system"
	openRCRunDir  = "/run/openrc"
)

// ServiceName is the name of the kubelet's service unit.
const ServiceName = "kubelet"

// Exit code of "systemctl status" for a unit it does not know.
const systemctlUnitUnknown = 4

// errNoInitSystem is returned when neither systemd nor OpenRC runs.
var errNoInitSystem = errors.New("no supported init system (systemd or OpenRC) is running")

// Host is the part of the machine a Service works with.
type Host interface {
	// Exists reports whether path exists.
	Exists(path string) bool
	Runner
}

// Runner runs commands on the machine.
type Runner interface {
	// Run runs a command and returns its combined output. When the command
	// ran and failed, the error has an ExitCode() int method, as
	// *exec.ExitError has.
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Command runs name on h and returns nil, or an error that names the
// command line and holds its output on one line.
func Command(ctx context.Context, h Runner, name string, args ...string) error {
	out, err := h.Run(ctx, name, args...)
	if err == nil {
		return nil
	}
	line := strings.Join(append([]string{name}, args...), " ")
	if msg := strings.Join(strings.Fields(string(out)), " "); msg != "" {
		return fmt.Errorf("%s: %w: %s", line, err, msg)
	}
	return fmt.Errorf("%s: %w", line, err)
}

// OSHost is the real machine.
type OSHost struct{}

// Exists reports whether path exists on this machine.
func (OSHost) Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Run runs a command on this machine.
func (OSHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// Service stops and starts the kubelet's service through the host's init
// system. Its methods never fail: what cannot be done is reported to Out as
// a warning and the caller carries on, since a node can be prepared on a
// machine whose init system kubeadm does not drive (the kubelet is then
// started by hand).
type Service struct {
	Host Host
	// Out receives progress messages and warnings.
	Out io.Writer
	// Name is the service's name (ServiceName by default).
	Name string
}

// NewService returns a Service for the kubelet on host.
func NewService(host Host, out io.Writer) *Service {
	return &Service{Host: host, Out: out, Name: ServiceName}
}

func (s *Service) name() string {
	if s.Name == "" {
		return ServiceName
	}
	return s.Name
}

// InitSystem tells which init system runs the host: systemd when it booted
// the machine, else OpenRC when it runs, else none.
func (s *Service) InitSystem() InitSystem {
	switch {
	case s.Host.Exists(systemdRunDir):
		return Systemd
	case s.Host.Exists(openRCRunDir):
		return OpenRC
	}
	return NoInitSystem
}

// Stop stops the kubelet for the time its files are rewritten, so it does
// not act on half of them. Stopping a stopped kubelet is fine; without an
// init system, or without a kubelet service, nothing is done.
func (s *Service) Stop(ctx context.Context) {
	is := s.InitSystem()
	if is == NoInitSystem {
		fmt.Fprintf(s.Out, "[kubelet-start] No supported init system (systemd or OpenRC) is running, so the kubelet is not stopped while its configuration is written\n")
		return
	}
	if !s.exists(ctx, is) {
		fmt.Fprintf(s.Out, "[kubelet-start] The init system knows no %s service, so it is not stopped while its configuration is written\n", s.name())
		return
	}
	var err error
	switch is {
	case Systemd:
		err = s.run(ctx, "systemctl", "stop", s.name())
	case OpenRC:
		err = s.run(ctx, "rc-service", s.name(), "stop")
	}
	if err != nil {
		fmt.Fprintf(s.Out, "[kubelet-start] WARNING: unable to stop the kubelet service while its configuration is written: %v\n", err)
	}
}

// Start (re)starts the kubelet so it reads its new files: systemd reloads
// its units first, then the service is restarted, which also starts a
// stopped one. Restarting a running kubelet is fine. Without an init
// system the user is told to start the kubelet.
func (s *Service) Start(ctx context.Context) {
	fmt.Fprintf(s.Out, "[kubelet-start] Starting the kubelet\n")
	s.restart(ctx, "started", "start")
}

// Restart is Start without its progress line, for a kubelet that already
// runs and only has to read a changed file again: it reports only what
// went wrong.
func (s *Service) Restart(ctx context.Context) {
	s.restart(ctx, "restarted", "restart")
}

// restart reloads the init system's units and restarts the service; done
// and do word the messages of what could not be done.
func (s *Service) restart(ctx context.Context, done, do string) {
	is := s.InitSystem()
	if is == NoInitSystem {
		fmt.Fprintf(s.Out, "[kubelet-start] No supported init system (systemd or OpenRC) is running, so the kubelet was not %s: %s it by other means\n", done, do)
		return
	}
	if !s.exists(ctx, is) {
		// After a fresh install systemd may not have loaded the unit
		// yet; the reload below can still make it known.
		fmt.Fprintf(s.Out, "[kubelet-start] The init system knows no %s service yet; trying to %s it anyway\n", s.name(), do)
	}
	var err error
	switch is {
	case Systemd:
		if err = s.run(ctx, "systemctl", "daemon-reload"); err != nil {
			err = fmt.Errorf("reloading systemd: %w", err)
			break
		}
		err = s.run(ctx, "systemctl", "restart", s.name())
	case OpenRC:
		err = s.run(ctx, "rc-service", s.name(), "restart")
	}
	if err != nil {
		fmt.Fprintf(s.Out, "[kubelet-start] WARNING: unable to %s the kubelet service: %v\n", do, err)
		fmt.Fprintf(s.Out, "[kubelet-start] Make sure the kubelet's service is reloaded and running before you go on\n")
	}
}

// ResolvConf returns the resolver file the kubelet should use when its
// configuration names none: SystemdResolvConf when systemd-resolved runs,
// else "". When that cannot be told it warns and returns "". Only asks.
func (s *Service) ResolvConf(ctx context.Context) string {
	active, err := s.resolvedActive(ctx)
	if err != nil {
		fmt.Fprintf(s.Out, "[kubelet-start] WARNING: cannot tell whether systemd-resolved is running (%v); the kubelet's resolvConf is left as configured\n", err)
		return ""
	}
	if active {
		return SystemdResolvConf
	}
	return ""
}

// resolvedActive asks the init system whether systemd-resolved runs.
func (s *Service) resolvedActive(ctx context.Context) (bool, error) {
	switch s.InitSystem() {
	case Systemd:
		out, err := s.Host.Run(ctx, "systemctl", "is-active", "systemd-resolved")
		if err != nil {
			if _, ran := exitCode(err); ran {
				return false, nil // inactive, failed or unknown
			}
			return false, fmt.Errorf("systemctl is-active systemd-resolved: %w", err)
		}
		return strings.TrimSpace(string(out)) == "active", nil
	case OpenRC:
		_, err := s.Host.Run(ctx, "rc-service", "systemd-resolved", "status")
		if err != nil {
			if _, ran := exitCode(err); ran {
				return false, nil
			}
			return false, fmt.Errorf("rc-service systemd-resolved status: %w", err)
		}
		return true, nil
	}
	return false, errNoInitSystem
}

// exists asks the init system whether it knows the service. When it cannot
// tell, it assumes the service exists and lets the next command say more.
func (s *Service) exists(ctx context.Context, is InitSystem) bool {
	switch is {
	case Systemd:
		_, err := s.Host.Run(ctx, "systemctl", "status", s.name())
		code, ran := exitCode(err)
		return !(ran && code == systemctlUnitUnknown)
	case OpenRC:
		out, err := s.Host.Run(ctx, "rc-service", s.name(), "status")
		return err == nil || !strings.Contains(string(out), "does not exist")
	}
	return false
}

// run runs a command, folding its output into the error when it fails.
func (s *Service) run(ctx context.Context, name string, args ...string) error {
	out, err := s.Host.Run(ctx, name, args...)
	if err == nil {
		return nil
	}
	cmd := strings.Join(append([]string{name}, args...), " ")
	if msg := oneLine(out); msg != "" {
		return fmt.Errorf("%s: %w: %s", cmd, err, msg)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// exitCode returns the exit code of a command that ran and failed.
func exitCode(err error) (code int, ran bool) {
	var e interface{ ExitCode() int }
	if errors.As(err, &e) {
		return e.ExitCode(), true
	}
	return 0, false
}

// oneLine returns a command's output on one line, its non-empty lines
// joined by "; ".
func oneLine(out []byte) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// StopService stops the kubelet's service and says why it could not.
// Stopping a stopped kubelet is fine. Used by reset, which must not go on
// deleting the kubelet's files quietly while it might still run.
func (s *Service) StopService(ctx context.Context) error {
	switch s.InitSystem() {
	case Systemd:
		return s.run(ctx, "systemctl", "stop", s.name())
	case OpenRC:
		return s.run(ctx, "rc-service", s.name(), "stop")
	}
	return errNoInitSystem
}
