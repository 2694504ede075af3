package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NodePath is the PATH of every program run in a node; /usr/local/sbin is
// the node's own folder of programs (kubelet, kubectl, kubeadm, systemctl).
const NodePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// nodeMounts are the node's own folders: node folder name -> path in the
// node's mount view. The host keeps an empty folder at each path (created
// if missing) for the mount to land on.
var nodeMounts = []struct{ dir, target string }{
	{"sbin", "/usr/local/sbin"},
	{"etc-kubernetes", "/etc/kubernetes"},
	{"var-lib-kubelet", "/var/lib/kubelet"},
	{"var-lib-etcd", "/var/lib/etcd"},
	{"var-lib-containerd", "/var/lib/containerd"},
	{"run-containerd", "/run/containerd"},
	{"run-systemd", "/run/systemd"},
	{"run-netns", "/run/netns"}, // containerd's pod network namespaces
	{"etc-cni-net.d", "/etc/cni/net.d"},
	{"var-lib-cni", "/var/lib/cni"},
	{"var-log-pods", "/var/log/pods"},
	{"var-log-containers", "/var/log/containers"},
	{"usr-libexec-kubernetes", "/usr/libexec/kubernetes"},
	// kubeadm's certificate renewal: its systemd units and status file.
	{"etc-systemd-system", "/etc/systemd/system"},
	// The renewal's status file, and the copy of kubeadm that the
	// NodeLocalAPILoadBalancer static Pod and the CISHardening
	// approver run.
	{"var-lib-kubeadm", "/var/lib/kubeadm"},
	// The API server's audit log (CISHardening).
	{"var-log-kubernetes", "/var/log/kubernetes"},
}

// nodeFiles are the node's own files: node file name -> path in the
// node's mount view. The host keeps an empty file at each path (created if
// missing) for the mount to land on.
var nodeFiles = []struct{ file, target string }{
	{"hosts", "/etc/hosts"},
	// KUBELET_EXTRA_ARGS: what the node's kubelet needs on this machine
	// whatever kubeadm writes (its own cgroup root), as an administrator
	// would put it there.
	{"default-kubelet", "/etc/default/kubelet"},
}

// hostFolders must exist on the host for the node's pods: kube-proxy
// mounts /lib/modules from the host (this machine has no kernel modules).
var hostFolders = []string{"/lib/modules"}

// Node is one node of a Cluster.
type Node struct {
	Cluster *Cluster
	Name    string
	// Index numbers the node within its cluster (1, 2, ...): it picks the
	// node's address and pod network.
	Index int
	// Dir is the node's folder in the cluster's state.
	Dir string
}

// Addr is the node's address on the cluster network.
func (n *Node) Addr() netip.Addr { return nodeAddr(n.Index) }

// PodPrefix is the pod network of the node (what its CNI config hands out).
func (n *Node) PodPrefix() netip.Prefix { return podPrefix(n.Index) }

// Addr6 is the node's address on the IPv6 cluster network, which exists
// once Cluster.EnableIPv6 has run.
func (n *Node) Addr6() netip.Addr { return nodeAddr6(n.Index) }

// PodPrefix6 is the node's IPv6 pod network.
func (n *Node) PodPrefix6() netip.Prefix { return podPrefix6(n.Index) }

// Netns is the name of the node's network namespace (under /run/netns).
func (n *Node) Netns() string { return n.Cluster.Name + "-" + n.Name }

// CgroupRoot is the node's cgroup. The node's /etc/default/kubelet gives it
// to the kubelet as its cgroup root (--cgroup-root), so pods of different
// nodes never share cgroups.
func (n *Node) CgroupRoot() string { return "/" + n.Cluster.Name + "-" + n.Name }

// HostPath is where a path of the node's mount view is on the host, for
// the paths that are the node's own folders ("" for the others).
func (n *Node) HostPath(p string) string {
	for _, m := range nodeMounts {
		if p == m.target || strings.HasPrefix(p, m.target+"/") {
			return filepath.Join(n.Dir, m.dir, strings.TrimPrefix(p, m.target))
		}
	}
	for _, f := range nodeFiles {
		if p == f.target {
			return filepath.Join(n.Dir, f.file)
		}
	}
	return ""
}

// LogDir holds the node's service logs (kubelet.log, containerd.log,
// boot.log).
func (n *Node) LogDir() string { return filepath.Join(n.Dir, "logs") }

// KubeletLaunches returns the times the node's stand-in for systemd
// launched the kubelet, in order.
func (n *Node) KubeletLaunches() ([]time.Time, error) {
	return serviceLaunches(filepath.Join(n.LogDir(), "kubelet.log"))
}

func (n *Node) pidFile() string { return filepath.Join(n.Dir, "boot.pid") }

// network is what the node's network namespace needs.
func (n *Node) network(all []*Node) nodeNetwork {
	return nodeNetwork{
		Netns: n.Netns(), Hub: n.Cluster.hub(), HubVeth: "v" + strconv.Itoa(n.Index),
		Addr: n.Addr(), Nameservers: hostNameservers(), Peers: peers(all, n),
	}
}

// writeHosts rewrites the node's /etc/hosts in place (it is bind-mounted:
// replacing the file would detach it).
func (n *Node) writeHosts(content string) error {
	return os.WriteFile(filepath.Join(n.Dir, "hosts"), []byte(content), 0o644)
}

// bootPID returns the process id of the node's running boot program, or 0.
func (n *Node) bootPID() int {
	data, err := os.ReadFile(n.pidFile())
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "\x00boot\x00") {
		return 0 // gone, or the number was reused by another program
	}
	return pid
}

// Running reports whether the node's boot program runs.
func (n *Node) Running() bool { return n.bootPID() != 0 }

// up prepares the node's folders and starts it unless it runs, then
// imports the images.
func (n *Node) up(ctx context.Context) error {
	if n.Running() {
		return nil
	}
	c := n.Cluster
	c.logf("[testbed] starting node %s (%s)", n.Name, n.Addr())
	for _, m := range nodeMounts {
		if err := os.MkdirAll(filepath.Join(n.Dir, m.dir), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return fmt.Errorf("creating the mount point %s: %w", m.target, err)
		}
	}
	for _, d := range hostFolders {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(n.LogDir(), 0o755); err != nil {
		return err
	}
	for _, f := range nodeFiles {
		if _, err := os.Stat(f.target); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(f.target, nil, 0o644); err != nil {
				return fmt.Errorf("creating the mount point %s: %w", f.target, err)
			}
		}
	}
	defaults := fmt.Sprintf("KUBELET_EXTRA_ARGS=--cgroup-root=%s\n", n.CgroupRoot())
	if err := os.WriteFile(filepath.Join(n.Dir, "default-kubelet"), []byte(defaults), 0o644); err != nil {
		return err
	}
	if err := n.linkPrograms(); err != nil {
		return err
	}
	registryHosts := ""
	if c.ServeImages {
		registryHosts = filepath.Join(n.Dir, "registry-hosts")
		if err := writeRegistryHosts(registryHosts, "registry.k8s.io", c.registryAddr()); err != nil {
			return err
		}
	}
	ctrdCfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(ctrdCfg, []byte(containerdConfig(c.PauseImage, registryHosts)), 0o644); err != nil {
		return err
	}
	cfg := BootConfig{Hostname: n.Name, LogDir: n.LogDir(), ContainerdConfig: ctrdCfg}
	for _, m := range nodeMounts {
		cfg.Binds = append(cfg.Binds, Bind{Source: filepath.Join(n.Dir, m.dir), Target: m.target})
	}
	for _, f := range nodeFiles {
		cfg.Binds = append(cfg.Binds, Bind{Source: filepath.Join(n.Dir, f.file), Target: f.target})
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(n.Dir, "boot.json")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		return err
	}
	if err := ensureCgroup(strings.TrimPrefix(n.CgroupRoot(), "/")); err != nil {
		return err
	}
	if err := n.startBoot(ctx, cfgPath); err != nil {
		return err
	}
	return n.importImages(ctx)
}

// linkPrograms links the cluster's programs into the node's
// /usr/local/sbin, and the test bed itself as systemctl.
func (n *Node) linkPrograms() error {
	dir := filepath.Join(n.Dir, "sbin")
	links := map[string]string{"systemctl": n.Cluster.Testbed}
	for name, p := range n.Cluster.Programs {
		links[name] = p
	}
	for name, target := range links {
		abs, err := filepath.Abs(target)
		if err != nil {
			return err
		}
		link := filepath.Join(dir, name)
		_ = os.Remove(link)
		if err := os.Symlink(abs, link); err != nil {
			return err
		}
	}
	return nil
}

// SetProgram points the node's /usr/local/sbin/<name> at path (an upgrade
// test swaps the kubelet this way).
func (n *Node) SetProgram(name, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	link := filepath.Join(n.Dir, "sbin", name)
	tmp := link + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(abs, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// startBoot starts the node's boot program in new mount, UTS and PID
// namespaces, inside the node's network namespace, moves it into the
// node's cgroup, and waits until it reports ready.
func (n *Node) startBoot(ctx context.Context, cfgPath string) error {
	goR, goW, err := os.Pipe()
	if err != nil {
		return err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		goR.Close()
		goW.Close()
		return err
	}
	log, err := os.OpenFile(filepath.Join(n.LogDir(), "boot.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+n.Netns(), "--", n.Cluster.Testbed, "boot", cfgPath)
	cmd.Env = []string{"PATH=" + NodePath, "HOME=/root"}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{goR, readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID,
		Setsid:     true,
	}
	err = cmd.Start()
	goR.Close()
	readyW.Close()
	if err != nil {
		goW.Close()
		readyR.Close()
		return fmt.Errorf("starting the boot program: %w", err)
	}
	pid := cmd.Process.Pid
	// Reap it if it ends while this process lives; it outlives us otherwise.
	go func() { _ = cmd.Wait() }()
	fail := func(err error) error {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("%w (see %s)", err, filepath.Join(n.LogDir(), "boot.log"))
	}
	if err := joinCgroup(strings.TrimPrefix(n.CgroupRoot(), "/"), pid); err != nil {
		goW.Close()
		readyR.Close()
		return fail(err)
	}
	_, err = goW.Write([]byte{1})
	goW.Close()
	if err != nil {
		readyR.Close()
		return fail(fmt.Errorf("starting the boot program: %w", err))
	}
	if err := os.WriteFile(n.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		readyR.Close()
		return fail(err)
	}
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(readyR).ReadString('\n')
		readyR.Close()
		got <- answer{strings.TrimSpace(line), err}
	}()
	select {
	case a := <-got:
		if a.line != "ready" {
			if a.line == "" && a.err != nil {
				return fail(fmt.Errorf("the boot program ended before it was ready: %v", a.err))
			}
			return fail(errors.New(strings.TrimPrefix(a.line, "error: ")))
		}
	case <-time.After(60 * time.Second):
		return fail(errors.New("the boot program was not ready within 60s"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	return nil
}

// importImages imports the cluster's image archives into the node's
// containerd, in parallel.
func (n *Node) importImages(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(n.Cluster.Archives))
	for i, a := range n.Cluster.Archives {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.ImportImage(ctx, a)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ImportImage imports an image archive (a host file, see WriteArchive)
// into the running node's containerd, in the namespace the kubelet uses.
// An image already known by a reference in the archive is replaced: a
// test swaps an image for a broken one (WriteCrashArchive) and back this
// way. Containers that run keep the image they started from.
func (n *Node) ImportImage(ctx context.Context, archive string) error {
	out, err := n.Command(ctx, "ctr", "-n", "k8s.io", "-a", "/run/containerd/containerd.sock", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into %s: %w: %s", filepath.Base(archive), n.Name, err, out)
	}
	return nil
}

// Command runs a program inside the node: its network, mount, UTS and PID
// namespaces, with the node's PATH and "/" as working folder.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	pid := n.bootPID()
	full := append([]string{"-t", strconv.Itoa(pid), "--net", "--mount", "--uts", "--pid", "--", name}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Env = []string{"PATH=" + NodePath, "HOME=/root"}
	cmd.Dir = "/"
	return cmd
}

// WriteCNIConfig writes the node's bridge network configuration into its
// /etc/cni/net.d (the kubelet reports the node Ready once one is there).
func (n *Node) WriteCNIConfig() error { return n.writeCNIConfig(n.PodPrefix()) }

// WriteCNIConfigIPv6 is WriteCNIConfig for a node whose pods get IPv6
// addresses only.
func (n *Node) WriteCNIConfigIPv6() error { return n.writeCNIConfig(n.PodPrefix6()) }

// WriteCNIConfigDualStack is WriteCNIConfig for a node whose pods get an
// IPv4 and an IPv6 address.
func (n *Node) WriteCNIConfigDualStack() error {
	return n.writeCNIConfig(n.PodPrefix(), n.PodPrefix6())
}

func (n *Node) writeCNIConfig(pods ...netip.Prefix) error {
	p := filepath.Join(n.Dir, "etc-cni-net.d", "10-testbed.conflist")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(BridgeCNIConfig(pods...)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// volatileMounts are the node folders that are memory file systems (/run)
// on a real machine: a restart starts them empty.
var volatileMounts = []string{"run-containerd", "run-systemd", "run-netns"}

// Restart stops the node as a power cycle would and starts it again: the
// boot program is stopped (the kernel ends every process of the node),
// its cgroups removed and its /run folders emptied; the disk folders
// (/etc/kubernetes, /var/lib/...) and the network namespace stay. The
// images are imported again, which replaces nothing that is there.
func (n *Node) Restart(ctx context.Context) error {
	n.Cluster.logf("[testbed] restarting node %s", n.Name)
	if err := n.stopBoot(); err != nil {
		return err
	}
	if err := removeCgroup(strings.TrimPrefix(n.CgroupRoot(), "/"), 30*time.Second); err != nil {
		return err
	}
	for _, m := range volatileMounts {
		dir := filepath.Join(n.Dir, m)
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return n.up(ctx)
}

// stopBoot ends the node's boot program (SIGTERM, SIGKILL after 30 s) and
// waits for it.
func (n *Node) stopBoot() error {
	pid := n.bootPID()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Down stops the node (its boot program stops the kubelet and containerd;
// the kernel ends the rest of its PID namespace), removes what is left in
// its cgroup, its network namespace and its folder. Safe to call again.
func (n *Node) Down(ctx context.Context) error {
	n.Cluster.logf("[testbed] stopping node %s", n.Name)
	_ = n.stopBoot()
	var errs []error
	if err := removeCgroup(strings.TrimPrefix(n.CgroupRoot(), "/"), 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := deleteNetns(ctx, runIP, n.Netns()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(n.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	if i := strings.LastIndex(s, ")"); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}
