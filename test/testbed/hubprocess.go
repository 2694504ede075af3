package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The cluster's hub runs helper processes of the test bed program (the
// image registry, the API server load balancer): each is "testbed NAME
// ARG...", started in the hub's network namespace, outliving its caller,
// with its process id in StateDir/NAME.pid and its output in
// StateDir/NAME.log. It tells that it serves by writing "ready" to the
// pipe it gets as file 3.

func (c *Cluster) hubPIDFile(name string) string { return filepath.Join(c.StateDir, name+".pid") }

// hubPID is the process id of the cluster's running hub process name, or 0.
func (c *Cluster) hubPID(name string) int {
	data, err := os.ReadFile(c.hubPIDFile(name))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "\x00"+name+"\x00") {
		return 0
	}
	return pid
}

// startHubProcess starts "testbed NAME ARGS..." in the hub unless it runs,
// and returns once it is ready.
func (c *Cluster) startHubProcess(ctx context.Context, name string, args []string) error {
	if c.hubPID(name) != 0 {
		return nil
	}
	if err := os.MkdirAll(c.StateDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(c.StateDir, name+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + c.hub(), "--", c.Testbed, name}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("starting the cluster's %s: %w", name, err)
	}
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(c.hubPIDFile(name), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case line := <-got:
		if line == "ready" {
			return nil
		}
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	_ = c.stopHubProcess(name)
	return fmt.Errorf("the cluster's %s did not start (see %s)", name, logPath)
}

// stopHubProcess ends the cluster's hub process name if it runs.
func (c *Cluster) stopHubProcess(name string) error {
	if pid := c.hubPID(name); pid != 0 {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("stopping the cluster's %s: %w", name, err)
		}
		for i := 0; i < 100 && c.hubPID(name) != 0 && !isZombie(pid); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := os.Remove(c.hubPIDFile(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
