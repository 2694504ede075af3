package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// netNamespace is a network namespace made for one control plane: lo is up
// and carries the advertise address. A sleeping child process holds it; the
// namespace goes away once that child and every program entered into it
// have exited.
type netNamespace struct {
	holder *exec.Cmd
	waited chan struct{}
	// ns is the namespace file, kept open so that in-process sockets can be
	// opened inside it.
	ns     *os.File
	closed atomic.Bool
}

// newNetNamespace creates the namespace and configures lo with addr.
func newNetNamespace(addr netip.Addr) (*netNamespace, error) {
	holder := exec.Command("sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := holder.Start(); err != nil {
		return nil, fmt.Errorf("creating a network namespace: %w", err)
	}
	n := &netNamespace{holder: holder, waited: make(chan struct{})}
	go func() {
		_ = holder.Wait()
		close(n.waited)
	}()
	nsPath := fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	f, err := os.Open(nsPath)
	if err != nil {
		n.close()
		return nil, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
	}
	n.ns = f
	bits := 32
	if addr.Is6() {
		bits = 128
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", netip.PrefixFrom(addr, bits).String(), "dev", "lo"},
	} {
		if out, err := n.command("ip", args...).CombinedOutput(); err != nil {
			n.close()
			return nil, fmt.Errorf("ip %v in the control plane's namespace: %w: %s", args, err, out)
		}
	}
	return n, nil
}

// path is the namespace's file, valid while the holder lives.
func (n *netNamespace) path() string {
	return fmt.Sprintf("/proc/%d/ns/net", n.holder.Process.Pid)
}

// command returns a command that runs name inside the namespace (nsenter
// enters it and then execs name, so the process id is name's own). The
// process is killed if the test process dies.
func (n *netNamespace) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=" + n.path(), "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// dialContext opens a connection from inside the namespace. The socket is
// created on an OS thread that has entered the namespace for that moment;
// a socket keeps the namespace it was created in, so the connection can be
// used from anywhere afterwards. addr must be an IP literal and port (a
// name lookup could move the dial onto other goroutines).
func (n *netNamespace) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(addr); err != nil {
		return nil, fmt.Errorf("dialing %q in the control plane's namespace: want an IP address and port: %w", addr, err)
	}
	if n.closed.Load() {
		return nil, fmt.Errorf("dialing %s: the control plane's namespace is closed", addr)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is given back only once it is in its own namespace
		// again; if that fails it stays locked and ends with this goroutine.
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("opening this thread's network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Setns(int(n.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("entering the control plane's network namespace: %w", err)}
			return
		}
		conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			if conn != nil {
				conn.Close()
			}
			done <- result{err: fmt.Errorf("leaving the control plane's network namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		done <- result{conn: conn, err: dialErr}
	}()
	r := <-done
	return r.conn, r.err
}

// close ends the holder and waits for it. Idempotent.
func (n *netNamespace) close() {
	n.closed.Store(true)
	if n.ns != nil {
		n.ns.Close()
	}
	if err := n.holder.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-n.waited
}
