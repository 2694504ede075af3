package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
)

// DefaultInitialClusterToken is the cluster token etcd uses when its
// --initial-cluster-token is not set, as in kubeadm's manifests.
const DefaultInitialClusterToken = "etcd-cluster"

// RestoreOptions say what to restore where, and as which member.
type RestoreOptions struct {
	// Snapshot is the snapshot file, as Save or etcdctl write it. Its
	// digest is checked.
	Snapshot string
	// DataDir is the etcd data folder to build. It must not exist, or be
	// an empty folder (a mount point, say), which is then filled in place.
	// Its parent is created (mode 0700) when missing.
	DataDir string
	// Name is the member's --name and PeerURLs its
	// --initial-advertise-peer-urls: the new cluster has this one member.
	Name     string
	PeerURLs []string
	// InitialClusterToken is the member's --initial-cluster-token; empty
	// means etcd's default, DefaultInitialClusterToken.
	InitialClusterToken string
}

// Restore builds a data folder for a single-member etcd cluster from a
// snapshot, as described in the package documentation. ctx is checked
// before the work starts; the restore itself is not interruptible.
func Restore(ctx context.Context, o RestoreOptions) (err error) {
	if err := o.check(); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	target := filepath.Clean(o.DataDir)
	if err := checkDataDir(target); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	// Only the file's shape is checked here: etcd's restore checks the
	// copy of the database it makes against the digest, and its storage
	// opens it; a caller that wants a damaged file refused before it
	// changes anything (as the restore command does, before it stops the
	// member) calls Check first. So a large snapshot is read once.
	f, _, err := openSnapshot(o.Snapshot)
	if err != nil {
		return fmt.Errorf("etcd restore from %s: %w", o.Snapshot, err)
	}
	f.Close()
	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, DirMode); err != nil {
		return fmt.Errorf("etcd restore: creating the folder of the data folder: %w", err)
	}
	// The data is built in a staging folder, then moved into place with
	// one rename. An existing (empty) data folder stays: it may be a mount
	// point, which cannot be replaced, nor renamed into from another file
	// system; the staging folder is then made inside it.
	inPlace := exists(target)
	stageIn := parent
	if inPlace {
		stageIn = target
	}
	tmp, err := os.MkdirTemp(stageIn, "."+filepath.Base(target)+".restore-*")
	if err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	defer func() {
		if err != nil {
			if rmErr := os.RemoveAll(tmp); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("removing the unfinished data folder %s: %w", tmp, rmErr))
			}
		}
	}()
	token := o.InitialClusterToken
	if token == "" {
		token = DefaultInitialClusterToken
	}
	if err := restoreInto(tmp, o, token); err != nil {
		return fmt.Errorf("etcd restore from %s: %w", o.Snapshot, err)
	}
	if inPlace {
		return moveUp(tmp, target)
	}
	// An empty target folder gives way; os.Remove refuses one that
	// something has been put into meanwhile.
	if err := checkDataDir(target); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("etcd restore: making way for the restored data: %w", err)
	}
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("etcd restore: moving the restored data into place: %w", err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	return nil
}

// moveUp moves the restored data from the staging folder tmp into the
// data folder target that holds it (and nothing else), gives target the
// data folder's mode and removes tmp. etcd's restore makes one entry,
// member/, so the data appears with one rename.
func moveUp(tmp, target string) error {
	entries, err := os.ReadDir(target)
	if err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(tmp) {
			return fmt.Errorf("etcd restore: the data folder %s is no longer empty (it has %s); an existing member's data is never overwritten", target, e.Name())
		}
	}
	restored, err := os.ReadDir(tmp)
	if err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	for _, e := range restored {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(target, e.Name())); err != nil {
			return fmt.Errorf("etcd restore: moving the restored data into place: %w", err)
		}
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	if err := os.Chmod(target, DirMode); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	if err := atomicfile.SyncDir(target); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}
	return nil
}

func (o RestoreOptions) check() error {
	switch {
	case o.Snapshot == "":
		return errors.New("no snapshot file given")
	case o.DataDir == "":
		return errors.New("no data folder given")
	case o.Name == "":
		return errors.New("no member name given")
	case len(o.PeerURLs) == 0:
		return errors.New("no peer URL given")
	}
	for _, u := range o.PeerURLs {
		if err := CheckURL(u); err != nil {
			return fmt.Errorf("peer URL: %w", err)
		}
	}
	return nil
}

// checkDataDir accepts a folder that does not exist or is empty.
func checkDataDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("the data folder %s is a file", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("the data folder %s is not empty (it has %s); move it away first, an existing member's data is never overwritten", dir, entries[0].Name())
	}
	return nil
}

// restoreInto builds, with etcd's own restore (what `etcdutl snapshot
// restore` runs), the data folder of a new cluster whose only member is
// o's in the empty folder dir: the database of the snapshot, with the
// former members dropped and this one recorded, and a write-ahead log and
// raft snapshot that start the cluster. The member and cluster IDs are
// derived from the member's name, peer URLs and token, so a member started
// with the same --name, --initial-advertise-peer-urls,
// --initial-cluster and --initial-cluster-token agrees with the data.
func restoreInto(dir string, o RestoreOptions, token string) error {
	initial := make([]string, 0, len(o.PeerURLs))
	for _, u := range o.PeerURLs {
		initial = append(initial, o.Name+"="+u)
	}
	logs := &etcdLog{}
	return logs.recovered(func() error {
		return snapshot.NewV3(logs.logger()).Restore(snapshot.RestoreConfig{
			SnapshotPath:        o.Snapshot,
			Name:                o.Name,
			OutputDataDir:       dir,
			PeerURLs:            o.PeerURLs,
			InitialCluster:      strings.Join(initial, ","),
			InitialClusterToken: token,
		})
	})
}

// etcdLog keeps what etcd's code logs as a warning or worse, for the
// error of a restore it gives up on: etcd's storage panics on a database
// it cannot open and says why only in its log.
type etcdLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *etcdLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *etcdLog) Sync() error { return nil }

// logger is a logger for etcd's code that writes warnings and worse,
// message and fields, to l, and panics instead of ending the process on a
// fatal error (recovered turns either panic into an error).
func (l *etcdLog) logger() *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", ConsoleSeparator: " "})
	return zap.New(zapcore.NewCore(enc, l, zapcore.WarnLevel), zap.WithFatalHook(zapcore.WriteThenPanic))
}

// recovered runs f, turning a panic of the etcd code it calls (a database
// it cannot make sense of) into an error that says what etcd logged last:
// the message of its panic, with its fields.
func (l *etcdLog) recovered(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			l.mu.Lock()
			lines := strings.Split(strings.TrimSpace(l.buf.String()), "\n")
			l.mu.Unlock()
			last := lines[len(lines)-1]
			if last == "" {
				last = fmt.Sprint(r)
			}
			err = fmt.Errorf("etcd failed on the snapshot's data: %s", last)
		}
	}()
	return f()
}
