package upgrade

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// EtcdData is the copy of this node's etcd data folder that an upgrade
// takes before it changes etcd (BackupDirName(tmp, "etcd", now)/etcd),
// and what a rollback that puts etcd's previous manifest or unit back
// does with it. StaticPods and HostUnits share it.
type EtcdData struct {
	// Backup is the copy; DataDir is the member's data folder.
	Backup, DataDir string
	// Members counts the members of the etcd cluster before the upgrade
	// (0: unknown).
	Members int
	// Stamp ends the name of the folder the replaced data is kept in,
	// DataDir + ".failed-" + Stamp.
	Stamp string
	// Chown, when set, gives the restored copy to etcd's user (the copy
	// is root's).
	Chown func() error
	Out   io.Writer
}

// RestoreDue reports whether a rollback that puts etcd's previous
// program back puts the backup of its data back too. ownFailed is true
// when etcd's own upgrade failed, false when etcd came up on the new
// version and a later component failed.
//
//   - etcd's own upgrade failed: the data goes back, as upstream kubeadm
//     does: the new version may have begun to convert it.
//   - etcd upgraded fine and is the cluster's only member: the data goes
//     back. The new version has moved the data to its schema, which the
//     previous minor version may refuse; what was written since the
//     backup is lost, which is less than a member that does not start.
//   - etcd upgraded fine and has peers: the data stays. The member has
//     moved on with its cluster, which still runs at the lower version;
//     an older copy of its data would make it panic ("tocommit is out
//     of range").
//
// The data cannot go back when the backup is missing, nor be judged when
// the cluster's size is unknown: the error says so, and the data stays.
func (e *EtcdData) RestoreDue(ownFailed bool) (bool, error) {
	switch {
	case ownFailed:
	case e.Members == 1:
	case e.Members > 1:
		return false, nil
	default:
		return false, fmt.Errorf("the size of the etcd cluster before the upgrade is unknown: etcd's data was left as the new version wrote it; if etcd does not start, put back the copy in %s by hand", e.Backup)
	}
	if _, err := os.Stat(e.Backup); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("the copy of etcd's data the upgrade made, %s, is gone: etcd's data was left as the new version wrote it", e.Backup)
		}
		return false, fmt.Errorf("etcd's data backup: %w", err)
	}
	return true, nil
}

// dueFor is RestoreDue for the rollback of component, where failed is
// the component whose own upgrade failed: false for any component but
// etcd, and when e is nil (etcd was not upgraded).
func (e *EtcdData) dueFor(component, failed string) (bool, error) {
	if e == nil || component != staticpod.Etcd {
		return false, nil
	}
	return e.RestoreDue(component == failed)
}

// Restore moves the data folder aside (never deleting it) and copies the
// backup into its place. etcd must not run.
func (e *EtcdData) Restore() error {
	aside, err := etcd.RestoreTree(e.Backup, e.DataDir, e.Stamp)
	if err != nil {
		return fmt.Errorf("putting etcd's data back from %s: %w", e.Backup, err)
	}
	if e.Chown != nil {
		if err := e.Chown(); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.Out, "[upgrade/etcd] etcd's data was put back from %q; the data the upgrade left is kept in %q\n", e.Backup, aside)
	return nil
}
