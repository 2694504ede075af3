package cli

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

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/etcdcluster"
	"github.com/kubeadm-go/kubeadm/internal/etcdsnapshot"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// etcdEnv is where "kubeadm etcd" finds this node's files, how it reaches
// its etcd member and how long it waits; tests swap it.
type etcdEnv struct {
	// kubernetesDir is /etc/kubernetes: snapshots and backups go under
	// its tmp folder. manifestDir is the kubelet's static Pod folder.
	kubernetesDir, manifestDir string
	now                        func() time.Time
	// dial opens connections to etcd; nil means plain TCP.
	dial func(ctx context.Context, addr string) (net.Conn, error)
	// dialTimeout bounds a connection attempt, callTimeout one request.
	dialTimeout, callTimeout time.Duration
	// listTimeout bounds asking for the member list, retries included.
	listTimeout time.Duration
	// saveTimeout bounds a whole snapshot transfer.
	saveTimeout time.Duration
	// stopTimeout bounds the wait for the kubelet to stop the member once
	// its manifest is gone, startTimeout the wait for it to answer again.
	stopTimeout, startTimeout time.Duration
	// poll is the pause between two looks at the member's client port.
	poll time.Duration
}

// hostEtcdEnv is etcdEnv for this machine.
func hostEtcdEnv() etcdEnv {
	return etcdEnv{
		kubernetesDir: staticpod.KubernetesDir,
		manifestDir:   filepath.Join(staticpod.KubernetesDir, "manifests"),
		now:           time.Now,
		dialTimeout:   5 * time.Second,
		callTimeout:   10 * time.Second,
		listTimeout:   30 * time.Second,
		saveTimeout:   30 * time.Minute,
		stopTimeout:   2 * time.Minute,
		startTimeout:  2 * time.Minute,
		poll:          time.Second,
	}
}

// backupStamp is the date and time in the names of snapshot and backup
// folders.
const backupStamp = "2006-01-02-15-04-05"

func newEtcdCmd(streams Streams, env etcdEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Work with the stacked etcd member of this control-plane node",
		Long: `Work with the etcd member that kubeadm runs as a static Pod on this
control-plane node. These commands are not part of upstream kubeadm.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	snapshot := &cobra.Command{
		Use:   "snapshot",
		Short: "Save the etcd data of the cluster to a file, or restore it from one",
		Args:  cobra.NoArgs,
		RunE:  workflow.RequireSubcommand,
	}
	snapshot.AddCommand(newEtcdSnapshotSaveCmd(streams, env), newEtcdSnapshotRestoreCmd(streams, env))
	cmd.AddCommand(snapshot)
	return cmd
}

// etcdSaveOptions are the flags of "kubeadm etcd snapshot save".
type etcdSaveOptions struct {
	output  string
	certDir string
}

func newEtcdSnapshotSaveCmd(streams Streams, env etcdEnv) *cobra.Command {
	o := &etcdSaveOptions{}
	cmd := &cobra.Command{
		Use:   "save",
		Short: "Write a snapshot of this node's etcd member to a file",
		Long: `Ask this node's etcd member (the one its manifest
/etc/kubernetes/manifests/etcd.yaml describes) for a snapshot of its data
and write it to a file of mode 0600. The snapshot's checksum is verified
before the file gets its name, so a file that exists is complete. An
existing file is never replaced.

The member is reached at its advertised client URL with the etcd
health-check client certificate (or, if that is missing, the API server's
etcd client certificate).`,
		Example: `  # Save to a new dated folder under /etc/kubernetes/tmp
  kubeadm etcd snapshot save

  # Save to a chosen file
  kubeadm etcd snapshot save --output /var/backups/etcd/snapshot.db`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), env, streams.Out)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.output, "output", "", `File to write the snapshot to (default: /etc/kubernetes/tmp/kubeadm-etcd-snapshot-<date and time>/snapshot.db).`)
	flags.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder of the cluster's certificates (the etcd ones are in its etcd sub-folder).")
	return cmd
}

func (o *etcdSaveOptions) run(ctx context.Context, env etcdEnv, out io.Writer) error {
	member, err := readLocalMember(env.manifestDir)
	if err != nil {
		return err
	}
	cfg, err := env.clientConfig(member, o.certDir, env.listTimeout)
	if err != nil {
		return err
	}
	path := o.output
	if path == "" {
		path = filepath.Join(env.kubernetesDir, "tmp", "kubeadm-etcd-snapshot-"+env.now().Format(backupStamp), "snapshot.db")
	}
	ctx, cancel := context.WithTimeout(ctx, env.saveTimeout)
	defer cancel()
	info, err := etcdsnapshot.Save(ctx, cfg, path, env.now)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[etcd] Saved a snapshot of member %q to %s: %d bytes, revision %d (took %v)\n",
		info.Member, info.Path, info.Size, info.Revision, info.Took.Round(time.Millisecond))
	return nil
}

// etcdRestoreOptions are the flags of "kubeadm etcd snapshot restore".
type etcdRestoreOptions struct {
	certDir string
	force   bool
}

func newEtcdSnapshotRestoreCmd(streams Streams, env etcdEnv) *cobra.Command {
	o := &etcdRestoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore SNAPSHOT",
		Short: "Replace the data of this node's etcd member with a snapshot",
		Long: `Replace the data of this node's etcd member with the content of a snapshot
file, for a cluster whose only etcd member runs on this node.

The snapshot is checked first. Then the etcd manifest is moved into a new
folder /etc/kubernetes/tmp/kubeadm-etcd-restore-<date and time> so that the
kubelet stops the member; once its client port is closed, its data folder
is moved into the same folder (or, on another file system, next to itself),
a new data folder is built from the snapshot, and the manifest is put back.
The command ends when the member answers again. If a step fails before the
new data is in place, what was moved is moved back.

The restored member starts a new cluster of one member: its data is that
of the snapshot, its name and addresses are those of its manifest, and the
cluster and member IDs are new. With more than one member in the cluster
the command refuses unless --force is given; so it does when the member
does not answer and the number of members cannot be checked (a member whose
data is damaged, for instance). Other members, if any, must then be removed
and joined again.`,
		Example:      `  kubeadm etcd snapshot restore /etc/kubernetes/tmp/kubeadm-etcd-snapshot-2026-01-02-03-04-05/snapshot.db`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), env, streams.Out, args[0])
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder of the cluster's certificates (the etcd ones are in its etcd sub-folder).")
	flags.BoolVarP(&o.force, "force", "f", false, "Restore even if the cluster has other members, or if the member does not answer.")
	return cmd
}

func (o *etcdRestoreOptions) run(ctx context.Context, env etcdEnv, out io.Writer, snapshotPath string) error {
	member, err := readLocalMember(env.manifestDir)
	if err != nil {
		return err
	}
	switch {
	case member.HostDataDir == "":
		return fmt.Errorf("the etcd manifest in %s names no --data-dir that a hostPath volume mounts: cannot tell where the member's data is", env.manifestDir)
	case len(member.PeerURLs) == 0:
		return fmt.Errorf("the etcd manifest in %s has no --initial-advertise-peer-urls", env.manifestDir)
	}
	info, err := etcdsnapshot.Check(snapshotPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[etcd] The snapshot %s is sound: %d bytes, revision %d\n", info.Path, info.Size, info.Revision)
	cfg, err := env.clientConfig(member, o.certDir, env.listTimeout)
	if err != nil {
		return err
	}
	if err := checkOnlyMember(ctx, cfg, member, o.force, out); err != nil {
		return err
	}

	stamp := env.now().Format(backupStamp)
	backup := filepath.Join(env.kubernetesDir, "tmp", "kubeadm-etcd-restore-"+stamp)
	if err := os.MkdirAll(backup, 0o700); err != nil {
		return fmt.Errorf("creating the backup folder: %w", err)
	}
	manifest := staticpod.ManifestPath(env.manifestDir, staticpod.Etcd)
	savedManifest := filepath.Join(backup, staticpod.Etcd+".yaml")
	if err := os.Rename(manifest, savedManifest); err != nil {
		_ = os.Remove(backup) // empty; the error below is the news
		return fmt.Errorf("moving the etcd manifest out of %s: %w", env.manifestDir, err)
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
	if err := env.waitPort(ctx, endpoint, false, env.stopTimeout); err != nil {
		return fail(fmt.Errorf("the etcd member did not stop: %w", err))
	}
	fmt.Fprintf(out, "[etcd] The member stopped: nothing answers at %s\n", endpoint)

	oldData, err := moveAside(member.HostDataDir, filepath.Join(backup, "etcd-data"), stamp)
	if err != nil {
		return fail(err)
	}
	if oldData != "" {
		undo = append(undo, func() error { return os.Rename(oldData, member.HostDataDir) })
		fmt.Fprintf(out, "[etcd] Moved the member's data folder %s to %s\n", member.HostDataDir, oldData)
	}
	err = etcdsnapshot.Restore(ctx, etcdsnapshot.RestoreOptions{
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
	fmt.Fprintf(out, "[etcd] Put the etcd manifest back into %s; waiting up to %v for the member to answer\n", env.manifestDir, env.startTimeout)

	healthCfg := cfg
	healthCfg.RetryTimeout = env.startTimeout
	c, err := etcdcluster.New(healthCfg)
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
	_, certFile, keyFile = etcdcluster.DefaultCertFiles(certDir)
	return caFile, certFile, keyFile
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// clientConfig is the configuration of a client of member's first client
// URL whose retried operations last up to retry.
func (env etcdEnv) clientConfig(member *staticpod.EtcdMember, certDir string, retry time.Duration) (etcdcluster.Config, error) {
	caFile, certFile, keyFile := etcdClientCerts(certDir)
	cfg := etcdcluster.Config{
		Endpoints:    member.ClientURLs[:1],
		CAFile:       caFile,
		CertFile:     certFile,
		KeyFile:      keyFile,
		DialTimeout:  env.dialTimeout,
		CallTimeout:  env.callTimeout,
		RetryTimeout: retry,
		Dial:         env.dial,
	}
	if err := etcdcluster.CheckURL(cfg.Endpoints[0]); err != nil {
		return cfg, fmt.Errorf("the etcd manifest's --advertise-client-urls: %w", err)
	}
	return cfg, nil
}

// checkOnlyMember refuses, unless force, a cluster with other members than
// this one, or one whose members cannot be listed.
func checkOnlyMember(ctx context.Context, cfg etcdcluster.Config, member *staticpod.EtcdMember, force bool, out io.Writer) error {
	c, err := etcdcluster.New(cfg)
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
func (env etcdEnv) waitPort(ctx context.Context, addr string, open bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := env.dial
	if dial == nil {
		d := &net.Dialer{}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, env.dialTimeout)
		conn, err := dial(attempt, addr)
		cancelAttempt()
		if conn != nil {
			conn.Close()
		}
		if (err == nil) == open {
			return nil
		}
		t := time.NewTimer(env.poll)
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
// moves it next to itself instead, with stamp in its name. It returns
// where dir went, or "" when dir does not exist.
func moveAside(dir, dest, stamp string) (string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("the member's data folder: %w", err)
	}
	err := os.Rename(dir, dest)
	if errors.Is(err, syscall.EXDEV) {
		dest = filepath.Clean(dir) + ".before-restore-" + stamp
		err = os.Rename(dir, dest)
	}
	if err != nil {
		return "", fmt.Errorf("moving the member's data folder aside: %w", err)
	}
	return dest, nil
}
