package resetphases

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/exitcode"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
	"github.com/kubeadm-go/kubeadm/internal/selfhosting"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// Phases returns the reset workflow, in upstream kubeadm's order. Every
// phase inspects the machine and does only what is left to do, so reset
// can run any number of times, or again after it was interrupted.
func Phases() []workflow.Phase[*Data] {
	return []workflow.Phase[*Data]{
		{
			Name:         "preflight",
			Short:        "Ask for confirmation and check privileges",
			InheritFlags: []string{"force", "dry-run", "ignore-preflight-errors"},
			Run:          runPreflight,
		},
		{
			Name:         "remove-etcd-member",
			Short:        "Remove this node's etcd member from the cluster's etcd, and its data",
			InheritFlags: []string{"kubeconfig", "dry-run", "cert-dir"},
			Run:          runRemoveEtcdMember,
		},
		{
			Name:         "cleanup-node",
			Short:        "Stop the kubelet, remove the pods' containers and the files init and join made",
			InheritFlags: []string{"cert-dir", "cri-socket", "dry-run", "cleanup-tmp-dir", "cleanup-network"},
			Run:          runCleanupNode,
		},
	}
}

func runPreflight(ctx context.Context, d *Data) error {
	if !d.Force && !d.DryRun {
		fmt.Fprintln(d.Out, "[reset] WARNING: what 'kubeadm init' or 'kubeadm join' set up on this machine will be undone.")
		if d.Confirm == nil || !d.Confirm("[reset] Are you sure you want to go on? [y/N]: ") {
			return errors.New("reset aborted: nothing was changed (answer y, or run it with --force to reset without asking)")
		}
	}
	fmt.Fprintln(d.Out, "[preflight] Running pre-flight checks")
	if err := preflight.Run(ctx, []preflight.Check{preflight.IsPrivilegedUser(d.Host)}, d.IgnorePreflightErrors, d.Out, d.Err); err != nil {
		return exitcode.PreflightError(err)
	}
	return nil
}

// localEtcd is what this node's etcd manifest says about its member.
type localEtcd struct {
	name, peerURL, dataDir string
	clientURLs             []string
}

// readLocalEtcd reads the etcd static Pod manifest, or else kubeadm's etcd
// unit of a control plane of host processes; nil when there is neither (a
// worker, or an external etcd). The data folder is the node's side of the
// volume that mounts the member's --data-dir.
func readLocalEtcd(d *Data) (*localEtcd, error) {
	m, err := staticpod.ReadEtcdMember(d.ManifestDir)
	if errors.Is(err, fs.ErrNotExist) {
		pod, ours, uerr := hostprocess.ReadUnit(hostprocess.UnitPath(d.SystemRoot, hostprocess.Etcd), hostprocess.Etcd)
		switch {
		case errors.Is(uerr, fs.ErrNotExist) || (uerr == nil && !ours):
			return nil, nil
		case uerr != nil:
			return nil, uerr
		}
		m, err = staticpod.EtcdMemberOf(pod), nil
	}
	if err != nil {
		return nil, err
	}
	e := &localEtcd{name: m.Name, clientURLs: m.ClientURLs, dataDir: m.HostDataDir}
	if len(m.PeerURLs) > 0 {
		e.peerURL = m.PeerURLs[0]
	}
	if e.dataDir == "" {
		e.dataDir = m.DataDir
	}
	if e.dataDir == "" {
		e.dataDir = "/var/lib/etcd"
	}
	return e, nil
}

func runRemoveEtcdMember(ctx context.Context, d *Data) error {
	local, err := readLocalEtcd(d)
	if err != nil {
		fmt.Fprintf(d.Out, "[reset] WARNING: %v; the etcd member of this node, if any, is left alone\n", err)
		return nil
	}
	if local == nil {
		fmt.Fprintln(d.Out, "[reset] No local etcd manifest or unit: this node has no etcd member (a worker, or an external etcd, which must be reset by hand)")
		return nil
	}
	if d.DryRun {
		fmt.Fprintf(d.Out, "[dryrun] Would remove the etcd member %q (%s) and delete the contents of %s\n", local.name, local.peerURL, local.dataDir)
		return nil
	}
	if err := removeMember(ctx, d, local); err != nil {
		fmt.Fprintf(d.Out, "[reset] WARNING: the etcd member %q could not be removed from the cluster: %v\n", local.name, err)
		fmt.Fprintln(d.Out, "[reset] If the cluster lives on, remove it by hand: etcdctl member remove <ID>")
	}
	fmt.Fprintf(d.Out, "[reset] Emptying the etcd data folder %s\n", local.dataDir)
	d.emptiedEtcdDir = local.dataDir
	var e emptier
	return errors.Join(e.emptyDir(local.dataDir, nil), e.err())
}

// removeMember removes this node's member, reaching etcd through the
// members the API server knows, or else through this node's own etcd.
func removeMember(ctx context.Context, d *Data, local *localEtcd) error {
	urls := local.clientURLs
	if d.NewClient != nil {
		if api, err := d.NewClient(d.KubeconfigPath); err == nil {
			lookup, cancel := context.WithTimeout(ctx, 10*time.Second)
			if found, err := etcd.ClientURLs(lookup, api); err == nil {
				urls = append(found, urls...)
			}
			cancel()
		}
	}
	if len(urls) == 0 {
		return errors.New("no etcd client URL is known")
	}
	urls = dedupe(urls)
	// Nothing listening (a node whose etcd never started, say after an
	// init that failed early) is told at once instead of by the client's
	// retries running out.
	if !anyListens(ctx, urls, 2*time.Second) {
		return fmt.Errorf("no etcd member answers at %s", strings.Join(urls, ", "))
	}
	caFile, certFile, keyFile := etcd.DefaultCertFiles(d.CertDir)
	c, err := etcd.New(etcd.Config{
		Endpoints: urls, CAFile: caFile, CertFile: certFile, KeyFile: keyFile,
		DialTimeout: 5 * time.Second, CallTimeout: 10 * time.Second, RetryTimeout: 30 * time.Second,
	})
	if err != nil {
		return err
	}
	defer c.Close()
	m, found, err := c.RemoveByPeerURL(ctx, local.peerURL)
	switch {
	case errors.Is(err, etcd.ErrOnlyVoter):
		fmt.Fprintf(d.Out, "[reset] The etcd member %q is the cluster's only voting member: it is not removed, the cluster ends with this node\n", local.name)
		return nil
	case err != nil:
		return err
	case found:
		fmt.Fprintf(d.Out, "[reset] Removed the etcd member %q (ID %s) from the cluster\n", local.name, m.HexID())
	default:
		fmt.Fprintf(d.Out, "[reset] The etcd member %q is not in the cluster any more\n", local.name)
	}
	return nil
}

// anyListens reports whether a TCP connection to the host of one of the
// URLs succeeds within timeout.
func anyListens(ctx context.Context, urls []string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		if conn, err := d.DialContext(ctx, "tcp", u.Host); err == nil {
			conn.Close()
			return true
		}
	}
	return false
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// lbPresent reports whether the node-local API server load balancer's
// state folder is on this node: reset looks at the node, not at a gate.
func lbPresent(d *Data) bool {
	_, err := os.Stat(filepath.Join(d.KubernetesDir, apilb.StateDir))
	return err == nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// kubeconfigFiles are the kubeconfig files init and join write.
var kubeconfigFiles = []string{"admin.conf", "super-admin.conf", "kubelet.conf", "bootstrap-kubelet.conf", "controller-manager.conf", "scheduler.conf"}

func runCleanupNode(ctx context.Context, d *Data) error {
	dirs := []string{d.ManifestDir, d.KubeletDir, d.CertDir}
	if d.Cfg.CleanupTmpDir {
		dirs = append(dirs, filepath.Join(d.KubernetesDir, "tmp"))
	}
	var files []string
	for _, f := range kubeconfigFiles {
		files = append(files, filepath.Join(d.KubernetesDir, f))
	}
	if d.DryRun {
		fmt.Fprintln(d.Out, "[dryrun] Would stop the kubelet service")
		fmt.Fprintf(d.Out, "[dryrun] Would unmount what is mounted under %q\n", d.KubeletDir)
		fmt.Fprintln(d.Out, "[dryrun] Would remove every pod of the container runtime")
		fmt.Fprintf(d.Out, "[dryrun] Would delete the contents of %v\n", dirs)
		fmt.Fprintf(d.Out, "[dryrun] Would delete %v\n", files)
		if d.CleanupNetwork {
			fmt.Fprintf(d.Out, "[dryrun] Would delete the CNI configuration in %s and kube-proxy's packet-filter rules\n", CNIConfigDir)
		}
		if present, _ := rootless.Present(d.EtcDir); present {
			fmt.Fprintln(d.Out, "[dryrun] Would remove the users and groups of the rootless control plane")
		}
		if files := d.renewalSchedule().Installed(); len(files) > 0 {
			fmt.Fprintf(d.Out, "[dryrun] Would disable and delete the automatic certificate renewal %v\n", files)
		}
		if comps, _ := d.units().Installed(); len(comps) > 0 {
			fmt.Fprintf(d.Out, "[dryrun] Would stop, disable and delete the systemd units of %v\n", comps)
		}
		if lbPresent(d) {
			fmt.Fprintf(d.Out, "[dryrun] Would delete the node-local API server load balancer's %q and %q\n", filepath.Join(d.KubernetesDir, apilb.StateDir), apilb.BinaryPath)
		}
		if checkpoints := filepath.Join(d.KubernetesDir, selfhosting.CheckpointFolder); exists(checkpoints) {
			fmt.Fprintf(d.Out, "[dryrun] Would delete the self-hosted control plane's checkpoints %q and %q\n", checkpoints, kubeadmbinary.Path)
		}
		return cleanupHardening(d)
	}
	var errs []error

	// A control plane of host processes goes first, the scheduler first
	// and etcd last, before its files and data are deleted.
	if err := d.units().Remove(ctx); err != nil {
		errs = append(errs, fmt.Errorf("removing the control plane's systemd units: %w", err))
	}
	fmt.Fprintln(d.Out, "[reset] Stopping the kubelet service")
	if err := kubelet.NewService(d.Service, d.Out).StopService(ctx); err != nil {
		fmt.Fprintf(d.Out, "[reset] WARNING: the kubelet service could not be stopped (%v); if a kubelet still runs, it may bring back files and containers\n", err)
	}
	fmt.Fprintf(d.Out, "[reset] Unmounting what the kubelet mounted below %q\n", d.KubeletDir)
	if err := unmountUnder(d, d.KubeletDir); err != nil {
		// Not fatal by itself: emptying the folder below finds every mount
		// point left, tries to unmount it again and keeps it if it cannot.
		fmt.Fprintf(d.Out, "[reset] WARNING: %v; mount points found while emptying %s are unmounted then, or kept with their contents\n", err, d.KubeletDir)
	}
	fmt.Fprintln(d.Out, "[reset] Stopping and removing every pod through the container runtime")
	if err := removePods(ctx, d); err != nil {
		fmt.Fprintf(d.Out, "[reset] WARNING: the containers could not be removed: %v\n", err)
	}
	if d.emptiedEtcdDir != "" {
		dirs = append(dirs, d.emptiedEtcdDir)
	}
	fmt.Fprintf(d.Out, "[reset] Emptying the folders %v\n", dirs)
	// Nothing is deleted through a mount point: the kubelet's are
	// unmounted (again) when found, any other is kept, and the run fails
	// naming what it kept once everything else is done.
	var e emptier
	for _, dir := range dirs {
		var unmount func(string) error
		if dir == d.KubeletDir {
			unmount = kubeletUnmount(d)
		}
		if err := e.emptyDir(dir, unmount); err != nil {
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(d.Out, "[reset] Deleting the kubeconfig files %v\n", files)
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if files := d.renewalSchedule().Installed(); len(files) > 0 {
		fmt.Fprintf(d.Out, "[reset] Disabling and deleting the automatic certificate renewal %v\n", files)
	}
	if err := d.renewalSchedule().Remove(ctx); err != nil {
		errs = append(errs, fmt.Errorf("removing the automatic certificate renewal: %w", err))
	}
	if d.CleanupNetwork {
		if err := cleanupNetwork(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	// What the NodeLocalAPILoadBalancer feature gate put on the node (its
	// manifest went with the manifest folder).
	if lbPresent(d) {
		fmt.Fprintf(d.Out, "[reset] Deleting the node-local API server load balancer's %q and %q\n", filepath.Join(d.KubernetesDir, apilb.StateDir), apilb.BinaryPath)
		if err := apilb.Remove(d.ManifestDir, d.KubernetesDir); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(apilb.BinaryPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// What a self-hosted control plane (SelfHosting) put on the node: its
	// checkpoints and the binary its checkpointer ran (the checkpointer's
	// manifest went with the manifest folder).
	if checkpoints := filepath.Join(d.KubernetesDir, selfhosting.CheckpointFolder); exists(checkpoints) {
		fmt.Fprintf(d.Out, "[reset] Deleting the self-hosted control plane's checkpoints %q and %q\n", checkpoints, kubeadmbinary.Path)
		if err := os.RemoveAll(checkpoints); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(kubeadmbinary.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The users and groups the RootlessControlPlane feature gate made.
	if present, err := rootless.Present(d.EtcDir); err != nil {
		errs = append(errs, err)
	} else if present {
		fmt.Fprintln(d.Out, "[reset] Removing the users and groups of the rootless control plane")
		if err := rootless.Remove(d.EtcDir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.err(); err != nil {
		errs = append(errs, err)
	}
	if err := cleanupHardening(d); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	printLeftovers(d)
	return nil
}

// unmountUnder unmounts every mount point below dir, deepest first, with
// the configured unmount flags. What is mounted on dir itself stays: it
// may be the disk the kubelet's data lives on (or, on a kubelet that
// bind-mounted its folder onto itself, the same folder), and the contents
// are deleted through it.
func unmountUnder(d *Data, dir string) error {
	if d.Mounts == nil || d.Unmount == nil {
		return nil
	}
	mounts, err := d.Mounts()
	if err != nil {
		return fmt.Errorf("listing mounts: %w", err)
	}
	clean := filepath.Clean(dir)
	var under []string
	for _, m := range mounts {
		if strings.HasPrefix(m, clean+"/") {
			under = append(under, m)
		}
	}
	// Deepest first; a path mounted twice is unmounted twice.
	sort.SliceStable(under, func(i, j int) bool { return len(under[i]) > len(under[j]) })
	flags := unmountFlags(d.Cfg.UnmountFlags)
	var errs []error
	for _, m := range under {
		if err := d.Unmount(m, flags); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// kubeletUnmount returns how a mount point found while emptying the
// kubelet's folder is unmounted: with the configured flags, never
// following a symbolic link swapped in. Nil when Data has no Unmount.
func kubeletUnmount(d *Data) func(path string) error {
	if d.Unmount == nil {
		return nil
	}
	flags := unmountFlags(d.Cfg.UnmountFlags) | unix.UMOUNT_NOFOLLOW
	return func(path string) error { return d.Unmount(path, flags) }
}

// unmountFlags turns the configuration's flag names into umount2 flags.
func unmountFlags(names []string) int {
	flags := 0
	for _, n := range names {
		switch n {
		case "MNT_FORCE":
			flags |= unix.MNT_FORCE
		case "MNT_DETACH":
			flags |= unix.MNT_DETACH
		case "MNT_EXPIRE":
			flags |= unix.MNT_EXPIRE
		case "UMOUNT_NOFOLLOW":
			flags |= unix.UMOUNT_NOFOLLOW
		}
	}
	return flags
}

// podRemovalRounds is how many times removePods lists the pods and removes
// what is left, as upstream tries each removal up to five times.
const podRemovalRounds = 5

// removePods stops and removes every pod sandbox (and so its containers)
// of the container runtime: on a kubeadm node they are all the kubelet's.
// A runtime can refuse a stop while a container is still starting or
// exiting; what a round leaves is tried again in the next, and the
// errors of the last round are returned.
func removePods(ctx context.Context, d *Data) error {
	if d.DialCRI == nil || d.Cfg.CRISocket == "" {
		return errors.New("no container runtime endpoint is known")
	}
	rt, err := d.DialCRI(ctx, d.Cfg.CRISocket)
	if err != nil {
		return err
	}
	defer rt.Close()
	for round := 1; ; round++ {
		pods, err := rt.ListPodSandboxes(ctx, nil)
		if err != nil {
			return err
		}
		var errs []error
		for _, p := range pods {
			if err := rt.StopPodSandbox(ctx, p.ID); err != nil {
				errs = append(errs, fmt.Errorf("stopping pod %s/%s: %w", p.Namespace, p.Name, err))
				continue
			}
			if err := rt.RemovePodSandbox(ctx, p.ID); err != nil {
				errs = append(errs, fmt.Errorf("removing pod %s/%s: %w", p.Namespace, p.Name, err))
			}
		}
		if len(errs) == 0 || round == podRemovalRounds {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		case <-time.After(time.Duration(round) * 200 * time.Millisecond):
		}
	}
}

// printLeftovers says what reset leaves for the administrator.
func printLeftovers(d *Data) {
	if !d.CleanupNetwork {
		fmt.Fprintf(d.Out, `
The reset leaves the pod network's configuration in %s: remove it
yourself, or run reset with --cleanup-network.

It also leaves the packet-filter rules kube-proxy made (iptables chains
named KUBE-*, IPVS tables): flush them with your tools (iptables,
ipvsadm), or run reset with --cleanup-network.
`, CNIConfigDir)
	}
	fmt.Fprint(d.Out, `
The reset leaves kubeconfig files outside /etc/kubernetes, such as
$HOME/.kube/config: remove those that point at this cluster yourself.
`)
}
