package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ControlSocket is where, inside a node, the stand-in systemctl reaches
// the node's boot program. It lives under /run/systemd, whose "system"
// folder tells programs (kubeadm among them) that systemd runs the node.
const ControlSocket = "/run/systemd/testbed-boot.sock"

// BootConfig is what a node's boot program is told, as a JSON file.
type BootConfig struct {
	Hostname string `json:"hostname"`
	// Binds are mounted in order, before anything starts.
	Binds []Bind `json:"binds"`
	// LogDir receives one log per service (kubelet.log, containerd.log).
	LogDir string `json:"logDir"`
	// ContainerdConfig is containerd's configuration file.
	ContainerdConfig string `json:"containerdConfig"`
	// KubeletRestartDelay is how long the kubelet service waits before it
	// is started again after it exited (systemd's RestartSec).
	KubeletRestartDelay time.Duration `json:"kubeletRestartDelay"`
	// KubeletDisabled keeps the kubelet stopped at boot, as on a machine
	// whose kubelet service is not enabled.
	KubeletDisabled bool `json:"kubeletDisabled,omitempty"`
}

// Bind is one bind mount of a node.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// The kubelet's files as upstream's systemd drop-in for kubeadm names them.
const (
	kubeletBootstrapKubeconfig = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeletKubeconfig          = "/etc/kubernetes/kubelet.conf"
	kubeletConfigFile          = "/var/lib/kubelet/config.yaml"
	kubeletFlagsFile           = "/var/lib/kubelet/kubeadm-flags.env"
	kubeletDefaultsFile        = "/etc/default/kubelet"
)

// Boot is a node's first process (PID 1 of the node's PID namespace),
// started by Node.start with the node's namespaces already made. It waits
// until its parent has put it into the node's cgroup (a byte on the "go"
// file), mounts the node's folders, names the host, starts containerd and
// the kubelet as services and tells its parent it is ready (a line on the
// "ready" file). It then answers the stand-in systemctl until SIGTERM,
// when it stops the kubelet, then containerd, and returns; the kernel then
// ends every other process of the node.
func Boot(cfgPath string, goFile, readyFile *os.File) error {
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var cfg BootConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("reading %s: %w", cfgPath, err)
	}
	if _, err := goFile.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("waiting for the go-ahead: %w", err)
	}
	goFile.Close()
	ready := func(msg string) {
		fmt.Fprintln(readyFile, msg)
		readyFile.Close()
	}
	if err := setUpNode(cfg); err != nil {
		ready("error: " + err.Error())
		return err
	}
	b := newBooter(cfg)
	// Children are reaped on their own goroutine: stopping a service
	// waits for its exit to be reaped.
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	go func() {
		for range children {
			b.reap()
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ln, err := listenControl()
	if err != nil {
		ready("error: " + err.Error())
		return err
	}
	go b.serve(ln)
	b.start("containerd")
	if !cfg.KubeletDisabled {
		b.start("kubelet")
	}
	go func() {
		if err := waitForSocket("/run/containerd/containerd.sock", 20*time.Second); err != nil {
			ready("error: " + err.Error())
			return
		}
		ready("ready")
	}()
	<-sigs
	ln.Close()
	b.stopUnits()
	b.stop("kubelet")
	b.stop("containerd")
	return nil
}

// setUpNode makes the mount view of the node and names it.
func setUpNode(cfg BootConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	for _, b := range cfg.Binds {
		if err := unix.Mount(b.Source, b.Target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting %s on %s: %w", b.Source, b.Target, err)
		}
	}
	// A /proc of the node's own PID namespace.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("naming the node: %w", err)
	}
	return os.MkdirAll("/run/systemd/system", 0o755)
}

// listenControl listens on ControlSocket, replacing a stale socket file.
func listenControl() (net.Listener, error) {
	_ = os.Remove(ControlSocket)
	return net.Listen("unix", ControlSocket)
}

// waitForSocket waits until a unix socket accepts connections.
func waitForSocket(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer: %w", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// service is one supervised program, systemd-style: while wanted it is
// started again restartDelay after it exits.
type service struct {
	name         string
	argv         func() ([]string, error)
	restartDelay time.Duration
	logPath      string
	// env is added to the boot program's environment.
	env []string
	// fromUnit marks a service read from a unit file of unitDir; once, a
	// unit whose process is not started again when it exits
	// (Restart=no).
	fromUnit, once bool

	wanted bool
	// restarts counts the automatic restarts since the last explicit
	// start (systemd's NRestarts).
	restarts int
	pid      int
	exited   chan struct{} // closed when the running process exits
	pending  *time.Timer   // a restart waiting for its delay
	lastErr  string
}

// Each launch of a service is stamped in its log as one line:
// launchPrefix, the time (RFC 3339, nanoseconds), launchInfix, the command.
const (
	launchPrefix = "==== "
	launchInfix  = " starting: "
)

// serviceLaunches returns the times the service whose log is logPath was
// launched, in order (see launchPrefix).
func serviceLaunches(logPath string) ([]time.Time, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var at []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		stamp, ok := strings.CutPrefix(sc.Text(), launchPrefix)
		if !ok {
			continue
		}
		stamp, _, ok = strings.Cut(stamp, launchInfix)
		if !ok {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			at = append(at, t)
		}
	}
	return at, sc.Err()
}

// booter runs a node's services.
type booter struct {
	mu       sync.Mutex
	services map[string]*service
	// enabled holds the units of unitDir that were enabled: timers such
	// as kubeadm's certificate renewal, whose files the stand-in knows
	// but runs nothing for, and service units, which it runs when
	// started (see controlUnit).
	enabled map[string]bool
	// unitOrder lists the services read from unit files in the order they
	// were first started; they are stopped in reverse order.
	unitOrder []string
	logDir    string
}

// unitDir is where the node's administrator units live (a folder of the
// node's own).
const unitDir = "/etc/systemd/system"

func newBooter(cfg BootConfig) *booter {
	// Ten seconds, as the kubelet unit kubeadm's packages install: until
	// kubeadm writes its configuration the kubelet exits at once, and
	// restarting it sooner would only burn CPU that init needs.
	delay := cfg.KubeletRestartDelay
	if delay == 0 {
		delay = 10 * time.Second
	}
	return &booter{enabled: map[string]bool{}, logDir: cfg.LogDir, services: map[string]*service{
		"containerd": {
			name:         "containerd",
			argv:         func() ([]string, error) { return []string{"containerd", "--config", cfg.ContainerdConfig}, nil },
			restartDelay: time.Second,
			logPath:      filepath.Join(cfg.LogDir, "containerd.log"),
		},
		"kubelet": {
			name:         "kubelet",
			argv:         kubeletArgv,
			restartDelay: delay,
			logPath:      filepath.Join(cfg.LogDir, "kubelet.log"),
		},
	}}
}

// kubeletArgv is the kubelet's command line as upstream's systemd drop-in
// for kubeadm builds it: the kubeconfig and config file flags, then
// $KUBELET_KUBEADM_ARGS from kubeadm-flags.env and $KUBELET_EXTRA_ARGS from
// /etc/default/kubelet, both split on white space.
func kubeletArgv() ([]string, error) {
	argv := []string{"kubelet",
		"--bootstrap-kubeconfig=" + kubeletBootstrapKubeconfig, "--kubeconfig=" + kubeletKubeconfig,
		"--config=" + kubeletConfigFile}
	for _, f := range []struct{ file, key string }{
		{kubeletFlagsFile, "KUBELET_KUBEADM_ARGS"},
		{kubeletDefaultsFile, "KUBELET_EXTRA_ARGS"},
	} {
		env, err := readEnvFile(f.file)
		if err != nil {
			return nil, err
		}
		argv = append(argv, strings.Fields(env[f.key])...)
	}
	return argv, nil
}

// readEnvFile reads a systemd EnvironmentFile (KEY=value lines, values
// optionally in double quotes). A missing file is empty, as with
// systemd's "EnvironmentFile=-".
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			} else {
				v = v[1 : len(v)-1]
			}
		}
		env[strings.TrimSpace(k)] = v
	}
	return env, sc.Err()
}

// start marks a service wanted and starts it unless it runs.
func (b *booter) start(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.services[name]
	s.wanted = true
	if s.pid == 0 {
		s.restarts = 0
		b.launchLocked(s)
	}
}

// launchLocked starts the service's process. A failure to start counts as
// an exit: the service is tried again after its delay.
func (b *booter) launchLocked(s *service) {
	if s.pending != nil {
		s.pending.Stop()
		s.pending = nil
	}
	argv, err := s.argv()
	var path string
	if err == nil {
		path, err = exec.LookPath(argv[0])
	}
	var p *os.Process
	if err == nil {
		var log *os.File
		log, err = os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintf(log, "%s%s%s%s\n", launchPrefix, time.Now().Format(time.RFC3339Nano), launchInfix, strings.Join(argv, " "))
			p, err = os.StartProcess(path, argv, &os.ProcAttr{
				Env:   append(os.Environ(), s.env...),
				Files: []*os.File{nil, log, log},
				Sys:   &syscall.SysProcAttr{Setsid: true},
			})
			log.Close()
		}
	}
	if err != nil {
		s.lastErr = err.Error()
		b.scheduleLocked(s)
		return
	}
	s.pid, s.exited = p.Pid, make(chan struct{})
}

// scheduleLocked starts the service again after its delay if it is still
// wanted then.
func (b *booter) scheduleLocked(s *service) {
	if !s.wanted || s.pending != nil {
		return
	}
	s.pending = time.AfterFunc(s.restartDelay, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		s.pending = nil
		if s.wanted && s.pid == 0 {
			s.restarts++
			b.launchLocked(s)
		}
	})
}

// reap collects every exited child; a service that exited is started
// again after its delay while it is wanted.
func (b *booter) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		b.mu.Lock()
		for _, s := range b.services {
			if s.pid == pid {
				s.pid = 0
				s.lastErr = waitStatusText(ws)
				close(s.exited)
				if s.once {
					s.wanted = false
				}
				b.scheduleLocked(s)
			}
		}
		b.mu.Unlock()
	}
}

// stop marks a service unwanted and ends its process: SIGTERM, then
// SIGKILL after ten seconds.
func (b *booter) stop(name string) {
	b.mu.Lock()
	s := b.services[name]
	s.wanted = false
	if s.pending != nil {
		s.pending.Stop()
		s.pending = nil
	}
	pid, exited := s.pid, s.exited
	b.mu.Unlock()
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
	}
}

// serve answers the stand-in systemctl: one request per connection, a
// line "VERB UNIT", answered by "exit CODE" and the output to print.
func (b *booter) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil && line == "" {
				return
			}
			verb, unit, _ := strings.Cut(strings.TrimSpace(line), " ")
			code, out := b.control(verb, unit)
			fmt.Fprintf(c, "exit %d\n%s", code, out)
		}()
	}
}

// control carries out one systemctl request and returns systemctl's exit
// code and output for it.
func (b *booter) control(verb, unit string) (int, string) {
	unit = strings.TrimSuffix(unit, ".service")
	if verb == "daemon-reload" {
		return 0, ""
	}
	b.mu.Lock()
	s, known := b.services[unit]
	b.mu.Unlock()
	if !known || s.fromUnit {
		u, ok, err := readServiceUnit(unit + ".service")
		if err != nil {
			return 1, err.Error() + "\n"
		}
		if ok || (known && b.forget(unit)) {
			return b.controlUnit(verb, unit, u, ok)
		}
		known = false
	}
	if !known {
		if code, out, ok := b.unitFile(verb, unit); ok {
			return code, out
		}
		switch verb {
		case "is-active":
			return 3, "inactive\n"
		case "is-enabled":
			return 1, fmt.Sprintf("Failed to get unit file state for %s.service: No such file or directory\n", unit)
		case "status":
			return 4, fmt.Sprintf("Unit %s.service could not be found.\n", unit)
		default:
			return 5, fmt.Sprintf("Failed to %s %s.service: Unit %s.service not found.\n", verb, unit, unit)
		}
	}
	switch verb {
	case "start":
		b.start(unit)
	case "stop":
		b.stop(unit)
	case "restart", "try-restart", "reload-or-restart":
		b.stop(unit)
		b.start(unit)
	case "enable", "disable":
	case "is-enabled":
		return 0, "enabled\n"
	case "show", "is-active", "status":
		return b.answer(verb, unit, s)
	default:
		return 1, fmt.Sprintf("Unknown command verb %s.\n", verb)
	}
	return 0, ""
}

// answer says how a service fares, for "show" (its MainPID, ActiveState
// and NRestarts), "is-active" and "status".
func (b *booter) answer(verb, unit string, s *service) (int, string) {
	b.mu.Lock()
	pid, running, wanted, lastErr, restarts := s.pid, s.pid != 0, s.wanted, s.lastErr, s.restarts
	b.mu.Unlock()
	state := "inactive"
	switch {
	case running:
		state = "active"
	case wanted:
		state = "activating"
	}
	switch verb {
	case "show":
		return 0, fmt.Sprintf("MainPID=%d\nActiveState=%s\nNRestarts=%d\n", pid, state, restarts)
	case "is-active":
		if running {
			return 0, "active\n"
		}
		return 3, state + "\n"
	}
	out := fmt.Sprintf("* %s.service\n   Active: %s\n", unit, state)
	if lastErr != "" {
		out += "   Last exit: " + lastErr + "\n"
	}
	if running {
		return 0, out
	}
	return 3, out
}

// forget drops a service read from a unit file whose file is gone, unless
// its process still runs (systemd keeps running a unit whose file was
// deleted until it is stopped). It reports whether the service is kept.
func (b *booter) forget(name string) (kept bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.services[name]
	if s.pid != 0 || s.wanted {
		return true
	}
	delete(b.services, name)
	b.unitOrder = slices.DeleteFunc(b.unitOrder, func(n string) bool { return n == name })
	delete(b.enabled, name+".service")
	return false
}

// controlUnit carries out a request about a service unit of unitDir: it
// runs the unit's command line as a service (the unit file read again at
// every start, as if systemd's units had been reloaded), restarted after
// RestartSec when it exits unless Restart=no, and answers for it as for
// the kubelet. hasFile is false for a unit whose file was deleted while
// its process runs: it can only be stopped or asked about.
func (b *booter) controlUnit(verb, name string, u serviceUnit, hasFile bool) (int, string) {
	file := name + ".service"
	switch verb {
	case "start", "restart", "try-restart", "reload-or-restart":
		if !hasFile {
			return 5, fmt.Sprintf("Failed to %s %s: Unit %s not found.\n", verb, file, file)
		}
		b.mu.Lock()
		s, known := b.services[name]
		b.mu.Unlock()
		if known && verb != "start" {
			b.stop(name)
		}
		if verb == "try-restart" && !known {
			return 0, ""
		}
		b.mu.Lock()
		if !known {
			s = &service{name: name, fromUnit: true, logPath: filepath.Join(b.logDir, file)}
			b.services[name] = s
			b.unitOrder = append(b.unitOrder, name)
		}
		argv := u.argv
		s.argv = func() ([]string, error) { return argv, nil }
		s.env, s.restartDelay, s.once = u.env, u.restartDelay, !u.restart
		b.mu.Unlock()
		b.start(name)
		return 0, ""
	case "stop":
		b.mu.Lock()
		_, known := b.services[name]
		b.mu.Unlock()
		if known {
			b.stop(name)
		}
		return 0, ""
	case "enable", "disable", "is-enabled":
		if !hasFile {
			return 1, fmt.Sprintf("Failed to %s unit: Unit file %s does not exist.\n", verb, file)
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		switch verb {
		case "enable":
			b.enabled[file] = true
		case "disable":
			delete(b.enabled, file)
		default:
			if b.enabled[file] {
				return 0, "enabled\n"
			}
			return 1, "disabled\n"
		}
		return 0, ""
	}
	b.mu.Lock()
	s, known := b.services[name]
	if !known {
		s = &service{name: name}
	}
	b.mu.Unlock()
	return b.answer(verb, name, s)
}

// stopUnits stops the services read from unit files, the last started
// first.
func (b *booter) stopUnits() {
	b.mu.Lock()
	order := slices.Clone(b.unitOrder)
	b.mu.Unlock()
	for _, name := range slices.Backward(order) {
		b.stop(name)
	}
}

// unitFile answers a request about a unit the boot program does not run
// but whose file is in unitDir: enable and disable are remembered, start
// and stop accepted, is-enabled and is-active answered from that. ok is
// false for a unit without a file.
func (b *booter) unitFile(verb, unit string) (code int, out string, ok bool) {
	name := unit
	if !strings.Contains(name, ".") {
		name += ".service"
	}
	if _, err := os.Stat(filepath.Join(unitDir, name)); err != nil {
		return 0, "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch verb {
	case "enable":
		b.enabled[name] = true
		return 0, "", true
	case "disable":
		delete(b.enabled, name)
		return 0, "", true
	case "start", "stop", "restart":
		return 0, "", true
	case "is-enabled":
		if b.enabled[name] {
			return 0, "enabled\n", true
		}
		return 1, "disabled\n", true
	case "is-active":
		if b.enabled[name] {
			return 0, "active\n", true
		}
		return 3, "inactive\n", true
	}
	return 0, "", false
}

// Systemctl is the stand-in systemctl of a node: it forwards each request
// to the node's boot program and prints its answer. Options are ignored.
func Systemctl(args []string, stdout io.Writer) int {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		fmt.Fprintln(stdout, "testbed systemctl: a verb is needed")
		return 1
	}
	verb, units := words[0], words[1:]
	if len(units) == 0 {
		units = []string{""}
	}
	code := 0
	for _, u := range units {
		c, out, err := systemctlRequest(verb, u)
		if err != nil {
			fmt.Fprintf(stdout, "System has not been booted with the test bed's systemd stand-in: %v\n", err)
			return 1
		}
		fmt.Fprint(stdout, out)
		if c != 0 {
			code = c
		}
	}
	return code
}

// systemctlRequest sends one request to the boot program.
func systemctlRequest(verb, unit string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", ControlSocket)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(c, "%s %s\n", verb, unit); err != nil {
		return 0, "", err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, "", err
	}
	code, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(head), "exit "))
	if err != nil {
		return 0, "", fmt.Errorf("unexpected answer %q", head)
	}
	rest, _ := io.ReadAll(r)
	return code, string(rest), nil
}

// waitStatusText says how a process ended.
func waitStatusText(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}
