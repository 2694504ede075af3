package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Node is this control-plane node's stacked etcd member as `kubeadm etcd
// snapshot save|restore` sees it: where its files are, how it is reached
// and how long each step waits. Tests hand in their own.
type Node struct {
	// KubernetesDir is /etc/kubernetes: snapshots and backups go under
	// its tmp folder. ManifestDir is the kubelet's static Pod folder.
	// CertDir holds the cluster's certificates (the etcd ones in its etcd
	// sub-folder).
	KubernetesDir, ManifestDir, CertDir string
	// UnitRoot prefixes the folder of the systemd unit a member run as a
	// host process has instead of a manifest ("" is /); SaveSnapshot
	// reads it when there is no manifest.
	UnitRoot string
	Now      func() time.Time
	// Dial opens connections to etcd; nil means plain TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// DialTimeout bounds a connection attempt, CallTimeout one request.
	DialTimeout, CallTimeout time.Duration
	// ListTimeout bounds asking for the member list, retries included.
	ListTimeout time.Duration
	// SaveTimeout bounds a whole snapshot transfer.
	SaveTimeout time.Duration
	// StopTimeout bounds the wait for the kubelet to stop the member once
	// its manifest is gone, StartTimeout the wait for it to answer again.
	StopTimeout, StartTimeout time.Duration
	// Poll is the pause between two looks at the member's client port.
	Poll time.Duration
}

// HostNode is Node for this machine, with the certificates in certDir.
func HostNode(certDir string) Node {
	return Node{
		KubernetesDir: staticpod.KubernetesDir,
		ManifestDir:   filepath.Join(staticpod.KubernetesDir, "manifests"),
		CertDir:       certDir,
		Now:           time.Now,
		DialTimeout:   5 * time.Second,
		CallTimeout:   10 * time.Second,
		ListTimeout:   30 * time.Second,
		SaveTimeout:   30 * time.Minute,
		StopTimeout:   2 * time.Minute,
		StartTimeout:  2 * time.Minute,
		Poll:          time.Second,
	}
}

// backupStamp is the date and time in the names of snapshot and backup
// folders.
const backupStamp = "2006-01-02-15-04-05"

// SaveSnapshot writes a checked snapshot of the node's member to output
// (default: a new dated folder under KubernetesDir/tmp), printing what it
// did to out.
func (env Node) SaveSnapshot(ctx context.Context, output string, out io.Writer) error {
	cfg, err := env.localClientConfig()
	if err != nil {
		return err
	}
	path := output
	if path == "" {
		path = filepath.Join(env.KubernetesDir, "tmp", "kubeadm-etcd-snapshot-"+env.Now().Format(backupStamp), "snapshot.db")
	}
	ctx, cancel := context.WithTimeout(ctx, env.SaveTimeout)
	defer cancel()
	info, err := Save(ctx, cfg, path, env.Now)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[etcd] Saved a snapshot of member %q to %s: %d bytes, revision %d (took %v)\n",
		info.Member, info.Path, info.Size, info.Revision, info.Took.Round(time.Millisecond))
	return nil
}

// Members lists the members of the etcd cluster of this node's member,
// asking that member.
func (env Node) Members(ctx context.Context) ([]Member, error) {
	cfg, err := env.localClientConfig()
	if err != nil {
		return nil, err
	}
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Members(ctx)
}

// localClientConfig is the configuration of a client of this node's
// member, read from its manifest or, without one, its unit.
func (env Node) localClientConfig() (Config, error) {
	member, err := readLocalMember(env.ManifestDir)
	if _, statErr := os.Stat(staticpod.ManifestPath(env.ManifestDir, staticpod.Etcd)); errors.Is(statErr, fs.ErrNotExist) {
		member, err = env.unitMember(err)
	}
	if err != nil {
		return Config{}, err
	}
	return env.clientConfig(member, env.CertDir, env.ListTimeout)
}

// RestoreSnapshot replaces the data of the node's member with a snapshot,
// for a cluster whose only member runs on this node (unless force): the
// manifest and data are moved into a dated backup folder, the kubelet
// stops the member, a new data folder is built, the manifest comes back
// and the command waits for the member to answer. A failure before the
// new data is in place puts back what was moved.
func (env Node) RestoreSnapshot(ctx context.Context, snapshotPath string, force bool, out io.Writer) error {
	member, err := readLocalMember(env.ManifestDir)
	if err != nil {
		return err
	}
	switch {
	case member.HostDataDir == "":
		return fmt.Errorf("the etcd manifest in %s names no --data-dir that a hostPath volume mounts: cannot tell where the member's data is", env.ManifestDir)
	case len(member.PeerURLs) == 0:
		return fmt.Errorf("the etcd manifest in %s has no --initial-advertise-peer-urls", env.ManifestDir)
	}
	info, err := Check(snapshotPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[etcd] The snapshot %s is sound: %d bytes, revision %d\n", info.Path, info.Size, info.Revision)
	cfg, err := env.clientConfig(member, env.CertDir, env.ListTimeout)
	if err != nil {
		return err
	}
	if err := checkOnlyMember(ctx, cfg, member, force, out); err != nil {
		return err
	}

	stamp := env.Now().Format(backupStamp)
	backup := filepath.Join(env.KubernetesDir, "tmp", "kubeadm-etcd-restore-"+stamp)
	if err := os.MkdirAll(backup, 0o700); err != nil {
		return fmt.Errorf("creating the backup folder: %w", err)
	}
	manifest := staticpod.ManifestPath(env.ManifestDir, staticpod.Etcd)
	savedManifest := filepath.Join(backup, staticpod.Etcd+".yaml")
	if err := os.Rename(manifest, savedManifest); err != nil {
		_ = os.Remove(backup) // empty; the error below is the news
		return fmt.Errorf("moving the etcd manifest out of %s: %w", env.ManifestDir, err)
	}
	fmt.Fprintf(out, "[etcd] Moved the etcd manifest to %s so that the kubelet stops the member\n", savedManifest)
	// undo puts back what was moved, in reverse order, and reports every
	// step that failed along with the error that made it necessary.
	undo := []func() error{
		func() error {
			// Empty unless a step below could not be undone.
			if err := os.Remove(backup); err != nil && !errors.Is(err, syscall.ENOTEMPTY) {
				return err
			}
			return nil
		},
		func() error { return os.Rename(savedManifest, manifest) },
	}
	fail := func(err error) error {
		errs := []error{err}
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](); uerr != nil {
				errs = append(errs, fmt.Errorf("undoing: %w", uerr))
			}
		}
		if len(errs) == 1 {
			fmt.Fprintln(out, "[etcd] Put back the etcd manifest and data as they were")
		}
		return errors.Join(errs...)
	}

	endpoint, err := hostPort(member.ClientURLs[0])
	if err != nil {
		return fail(err)
	}
	if err := env.waitPort(ctx, endpoint, false, env.StopTimeout); err != nil {
		return fail(fmt.Errorf("the etcd member did not stop: %w", err))
	}
	fmt.Fprintf(out, "[etcd] The member stopped: nothing answers at %s\n", endpoint)

	oldData, inPlace, err := moveAside(member.HostDataDir, filepath.Join(backup, "etcd-data"), stamp)
	if err != nil {
		return fail(err)
	}
	switch {
	case inPlace:
		undo = append(undo, func() error {
			if err := emptyDir(member.HostDataDir); err != nil {
				return err
			}
			if err := CopyContent(oldData, member.HostDataDir); err != nil {
				return err
			}
			return os.RemoveAll(oldData) // the copy, now put back
		})
		fmt.Fprintf(out, "[etcd] The member's data folder %s is a mount point: moved its content to %s\n", member.HostDataDir, oldData)
	case oldData != "":
		undo = append(undo, func() error { return os.Rename(oldData, member.HostDataDir) })
		fmt.Fprintf(out, "[etcd] Moved the member's data folder %s to %s\n", member.HostDataDir, oldData)
	}
	err = Restore(ctx, RestoreOptions{
		Snapshot:            snapshotPath,
		DataDir:             member.HostDataDir,
		Name:                member.Name,
		PeerURLs:            member.PeerURLs,
		InitialClusterToken: member.InitialClusterToken,
	})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(out, "[etcd] Restored the snapshot into %s as member %q (%s)\n", member.HostDataDir, member.Name, strings.Join(member.PeerURLs, ","))

	data, err := boundedread.ReadFile(savedManifest, boundedread.MaxFile)
	if err == nil {
		err = atomicfile.Write(manifest, data, staticpod.FileMode)
	}
	if err != nil {
		return fmt.Errorf("putting the etcd manifest back: %w; the member's restored data is in %s, copy %s to %s by hand", err, member.HostDataDir, savedManifest, manifest)
	}
	fmt.Fprintf(out, "[etcd] Put the etcd manifest back into %s; waiting up to %v for the member to answer\n", env.ManifestDir, env.StartTimeout)

	healthCfg := cfg
	healthCfg.RetryTimeout = env.StartTimeout
	c, err := New(healthCfg)
	if err == nil {
		err = c.CheckHealth(ctx)
		c.Close()
	}
	if err != nil {
		return fmt.Errorf("the restored etcd member does not answer: %w; the data it had before is kept in %s", err, backup)
	}
	fmt.Fprintf(out, "[etcd] The member answers with the snapshot's data (revision %d); its former data and manifest are kept in %s\n", info.Revision, backup)
	return nil
}

// unitMember reads the member of this node's etcd unit of a control plane
// of host processes (docs/decisions/013); noManifest is returned when
// there is no such unit either.
func (env Node) unitMember(noManifest error) (*staticpod.EtcdMember, error) {
	p := hostprocess.UnitPath(env.UnitRoot, hostprocess.Etcd)
	pod, ours, err := hostprocess.ReadUnit(p, hostprocess.Etcd)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !ours):
		return nil, noManifest
	case err != nil:
		return nil, err
	}
	member := staticpod.EtcdMemberOf(pod)
	if len(member.ClientURLs) == 0 {
		return nil, fmt.Errorf("the etcd unit %s sets no --advertise-client-urls", p)
	}
	return member, nil
}

// readLocalMember reads this node's etcd manifest, saying plainly when
// there is none.
func readLocalMember(manifestDir string) (*staticpod.EtcdMember, error) {
	member, err := staticpod.ReadEtcdMember(manifestDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no etcd manifest in %s: this node runs no stacked etcd member (it is a worker, or the cluster uses an external etcd, which kubeadm does not manage)", manifestDir)
	case err != nil:
		return nil, err
	case member.Name == "":
		return nil, fmt.Errorf("the etcd manifest in %s sets no --name", manifestDir)
	case len(member.ClientURLs) == 0:
		return nil, fmt.Errorf("the etcd manifest in %s sets no --advertise-client-urls", manifestDir)
	}
	return member, nil
}

// etcdClientCerts returns the etcd CA and the client pair to reach the
// member with: the etcd health-check client's pair, or the API server's
// etcd client pair when the former is missing.
func etcdClientCerts(certDir string) (caFile, certFile, keyFile string) {
	caFile = filepath.Join(certDir, "etcd", "ca.crt")
	certFile = filepath.Join(certDir, "etcd", "healthcheck-client.crt")
	keyFile = filepath.Join(certDir, "etcd", "healthcheck-client.key")
	if exists(certFile) && exists(keyFile) {
		return caFile, certFile, keyFile
	}
	_, certFile, keyFile = DefaultCertFiles(certDir)
	return caFile, certFile, keyFile
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// clientConfig is the configuration of a client of member's first client
// URL whose retried operations last up to retry.
func (env Node) clientConfig(member *staticpod.EtcdMember, certDir string, retry time.Duration) (Config, error) {
	caFile, certFile, keyFile := etcdClientCerts(certDir)
	cfg := Config{
		Endpoints:    member.ClientURLs[:1],
		CAFile:       caFile,
		CertFile:     certFile,
		KeyFile:      keyFile,
		DialTimeout:  env.DialTimeout,
		CallTimeout:  env.CallTimeout,
		RetryTimeout: retry,
		Dial:         env.Dial,
	}
	if err := CheckURL(cfg.Endpoints[0]); err != nil {
		return cfg, fmt.Errorf("the etcd manifest's --advertise-client-urls: %w", err)
	}
	return cfg, nil
}

// checkOnlyMember refuses, unless force, a cluster with other members than
// this one, or one whose members cannot be listed.
func checkOnlyMember(ctx context.Context, cfg Config, member *staticpod.EtcdMember, force bool, out io.Writer) error {
	c, err := New(cfg)
	if err != nil {
		return err
	}
	members, err := c.Members(ctx)
	c.Close()
	if err != nil {
		if !force {
			return fmt.Errorf("cannot list the etcd members to make sure %q is the only one: %w; if it is, and it is down, run again with --force", member.Name, err)
		}
		fmt.Fprintf(out, "[etcd] WARNING: the etcd members cannot be listed (%v); going on because of --force\n", err)
		return nil
	}
	if len(members) <= 1 {
		return nil
	}
	names := make([]string, 0, len(members))
	for _, m := range members {
		names = append(names, m.String())
	}
	if !force {
		return fmt.Errorf("the etcd cluster has %d members (%s): restoring one of them would split it; restore with --force only if the others are gone, then remove them and join them again",
			len(members), strings.Join(names, "; "))
	}
	fmt.Fprintf(out, "[etcd] WARNING: the etcd cluster has %d members (%s); this one will start a new cluster on its own because of --force\n", len(members), strings.Join(names, "; "))
	return nil
}

// hostPort is the host and port of a client URL.
func hostPort(clientURL string) (string, error) {
	u, err := url.Parse(clientURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("etcd client URL %q: want scheme://host:port", clientURL)
	}
	return u.Host, nil
}

// waitPort waits until something answers at addr (open) or nothing does
// (!open), within timeout.
func (env Node) waitPort(ctx context.Context, addr string, open bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := env.Dial
	if dial == nil {
		d := &net.Dialer{}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, env.DialTimeout)
		conn, err := dial(attempt, addr)
		cancelAttempt()
		if conn != nil {
			conn.Close()
		}
		if (err == nil) == open {
			return nil
		}
		t := time.NewTimer(env.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			if open {
				return fmt.Errorf("nothing answers at %s after %v", addr, timeout)
			}
			return fmt.Errorf("%s still answers after %v", addr, timeout)
		case <-t.C:
		}
	}
}

// moveAside moves dir to dest; when dest is on another file system it
// moves it next to itself instead, with stamp in its name. A dir that is a
// mount point cannot be moved: its content is moved into dest and dir
// stays, empty (inPlace). It returns where dir's content went, or "" when
// dir does not exist.
func moveAside(dir, dest, stamp string) (aside string, inPlace bool, err error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, fmt.Errorf("the member's data folder: %w", err)
	}
	aside = dest
	err = os.Rename(dir, aside)
	if errors.Is(err, syscall.EXDEV) {
		aside = filepath.Clean(dir) + ".before-restore-" + stamp
		err = os.Rename(dir, aside)
	}
	if errors.Is(err, syscall.EBUSY) {
		if err := MoveContent(dir, dest); err != nil {
			return "", false, fmt.Errorf("moving the content of the member's data folder (a mount point) aside: %w", err)
		}
		return dest, true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("moving the member's data folder aside: %w", err)
	}
	return aside, false, nil
}
