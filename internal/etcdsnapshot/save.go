package etcdsnapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/etcdcluster"
)

// Modes of a snapshot file and of the folders Save creates for it.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// Info describes a snapshot file.
type Info struct {
	// Path is the file.
	Path string
	// Size is its length in bytes, the trailing digest included.
	Size int64
	// Revision is the etcd store revision the snapshot holds: that of the
	// last change in it.
	Revision int64
	// Member is the name of the member that sent the snapshot; Check
	// leaves it empty.
	Member string
	// Took is how long Save took, from its start until the file had its
	// name; Check leaves it zero.
	Took time.Duration
}

// snapshotAPI is what Save asks of etcd: a part of etcd's client,
// *clientv3.Client, which unit tests replace.
type snapshotAPI interface {
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
	MemberList(ctx context.Context, opts ...clientv3.OpOption) (*clientv3.MemberListResponse, error)
	SnapshotWithVersion(ctx context.Context) (*clientv3.SnapshotResponse, error)
}

// Save writes a snapshot of the member at cfg.Endpoints[0] (the other
// endpoints are not used) to path, creating path's missing folders with
// mode 0700, and returns what it wrote. now is the clock Took is measured
// with; nil means time.Now. An existing file at path is an error: Save
// never replaces a snapshot. See the package documentation for what is
// left behind on failure (nothing).
func Save(ctx context.Context, cfg etcdcluster.Config, path string, now func() time.Time) (*Info, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd snapshot: no etcd endpoint given")
	}
	cfg.Endpoints = cfg.Endpoints[:1]
	if err := checkTarget(path); err != nil {
		return nil, err
	}
	client, err := etcdcluster.NewV3Client(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot: %w", err)
	}
	defer client.Close()
	return save(ctx, client, cfg.Endpoints[0], cfg.CallTimeout, StallTimeout, path, now)
}

// StallTimeout is how long Save waits for the next piece of a snapshot
// (the first one included) before it gives the transfer up: etcd sends a
// snapshot in pieces of 32 KiB as fast as it reads them, so a member that
// sends nothing for that long has stopped.
const StallTimeout = time.Minute

// checkTarget refuses an empty path and one that already exists.
func checkTarget(path string) error {
	if path == "" {
		return errors.New("etcd snapshot: no file path given")
	}
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return fmt.Errorf("etcd snapshot: %s already exists; choose another path or move that file away", path)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("etcd snapshot: %w", err)
	}
	return nil
}

// save is Save once the client is made: api talks to endpoint, every
// request but the transfer itself is bounded by callTimeout, and the
// transfer ends when no data came for stall.
func save(ctx context.Context, api snapshotAPI, endpoint string, callTimeout, stall time.Duration, path string, now func() time.Time) (_ *Info, err error) {
	if now == nil {
		now = time.Now
	}
	began := now()
	if err := checkTarget(path); err != nil {
		return nil, err
	}
	member, err := memberName(ctx, api, endpoint, callTimeout)
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot from %s: %w", endpoint, err)
	}
	created, err := makeFolders(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, removeFolders(created))
		}
	}()
	var info *Info
	err = atomicfile.WriteWith(path, FileMode, func(f *os.File) error {
		transfer, cancel := context.WithCancel(ctx)
		defer cancel()
		guard := newStallGuard(stall, cancel)
		defer guard.stop()
		resp, err := api.SnapshotWithVersion(transfer)
		if err != nil {
			return fmt.Errorf("asking %s for a snapshot: %w", endpoint, guard.explain(err))
		}
		defer resp.Snapshot.Close()
		n, err := io.Copy(f, guard.reader(resp.Snapshot))
		if err != nil {
			return fmt.Errorf("receiving the snapshot from %s (%d bytes so far): %w", endpoint, n, guard.explain(err))
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("flushing the snapshot: %w", err)
		}
		if err := checkSize(n); err != nil {
			return err
		}
		info, err = check(f, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot: %w", err)
	}
	info.Path = path
	info.Member = member
	info.Took = now().Sub(began)
	return info, nil
}

// memberName asks endpoint who it is, each request bounded by
// callTimeout.
func memberName(ctx context.Context, api snapshotAPI, endpoint string, callTimeout time.Duration) (string, error) {
	var st *clientv3.StatusResponse
	if err := etcdcluster.Bounded(ctx, callTimeout, func(ctx context.Context) (err error) {
		st, err = api.Status(ctx, endpoint)
		return err
	}); err != nil {
		return "", fmt.Errorf("asking for the member's status: %w", err)
	}
	if st.Header == nil || st.Header.MemberId == 0 {
		return "", errors.New("the member's status has no header: cannot tell which member it is")
	}
	id := st.Header.MemberId
	var list *clientv3.MemberListResponse
	if err := etcdcluster.Bounded(ctx, callTimeout, func(ctx context.Context) (err error) {
		list, err = api.MemberList(ctx)
		return err
	}); err != nil {
		return "", fmt.Errorf("listing the members: %w", err)
	}
	for _, m := range list.Members {
		if m.ID == id {
			return m.Name, nil
		}
	}
	return "", fmt.Errorf("member %x, which answered, is not in the member list", id)
}

// makeFolders creates dir and its missing parents with DirMode and returns
// the folders it created, outermost first.
func makeFolders(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		_, err := os.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("checking folder %s: %w", d, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], DirMode); err != nil {
			return nil, errors.Join(fmt.Errorf("creating folder %s: %w", missing[i], err), removeFolders(created))
		}
		created = append(created, missing[i])
	}
	return created, nil
}

// removeFolders removes the folders makeFolders created, innermost first.
func removeFolders(created []string) error {
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		if err := os.Remove(created[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing folder %s created for the snapshot: %w", created[i], err))
		}
	}
	return errors.Join(errs...)
}

// stallGuard ends a transfer (by cancelling its context) when no data came
// for its time: at the start, and after each piece read through reader.
type stallGuard struct {
	after   time.Duration
	timer   *time.Timer
	stalled atomic.Bool
}

func newStallGuard(after time.Duration, cancel context.CancelFunc) *stallGuard {
	g := &stallGuard{after: after}
	g.timer = time.AfterFunc(after, func() {
		g.stalled.Store(true)
		cancel()
	})
	return g
}

// reader is r, each piece of data it gives restarting the wait.
func (g *stallGuard) reader(r io.Reader) io.Reader { return stallReader{r: r, g: g} }

func (g *stallGuard) stop() { g.timer.Stop() }

// explain says so when err comes from the guard ending the transfer.
func (g *stallGuard) explain(err error) error {
	if g.stalled.Load() {
		return fmt.Errorf("the member sent nothing for %v: %w", g.after, err)
	}
	return err
}

type stallReader struct {
	r io.Reader
	g *stallGuard
}

func (s stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 && !s.g.stalled.Load() {
		s.g.timer.Reset(s.g.after)
	}
	return n, err
}
