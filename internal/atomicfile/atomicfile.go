package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Write replaces path with data, with the given permission bits.
//
// It writes a temporary file in the same folder, named with a leading dot
// so the kubelet's manifest watcher ignores it, flushes it to disk, sets its
// mode (the umask does not apply), renames it over path and flushes the
// folder. If anything fails the temporary file is removed and path is left
// as it was. A temporary file for path that a killed process left behind
// is removed first. The folder must exist.
func Write(path string, data []byte, mode os.FileMode) error {
	return WriteWith(path, mode, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Replace is Write that keeps the owner (user and group) of the file it
// replaces, when there is one and root does not own it: a component that
// runs as its own user (etcd under the CISHardening profile, a rootless
// control plane) still reads its renewed certificate. A new file is
// root's, as with Write.
func Replace(path string, data []byte, mode os.FileMode) error {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		fi = nil
	}
	return WriteOwnedLike(path, data, mode, fi)
}

// WriteLike is Write with the mode and owner of the file at like (path
// itself, or the file a new one takes after), or with mode def and root's
// ownership when like does not exist: a component that runs as its own
// user (a rootless control plane, etcd under the CISHardening profile)
// still reads the file it is given again.
func WriteLike(path string, data []byte, like string, def os.FileMode) error {
	fi, err := os.Stat(like)
	if err != nil {
		return Write(path, data, def)
	}
	return WriteOwnedLike(path, data, fi.Mode().Perm(), fi)
}

// WriteOwnedLike is Write that gives the file the owner (user and group)
// of like when root does not own it; a nil like leaves the file root's.
func WriteOwnedLike(path string, data []byte, mode os.FileMode, like os.FileInfo) error {
	var st *syscall.Stat_t
	if like != nil {
		st, _ = like.Sys().(*syscall.Stat_t)
	}
	return WriteWith(path, mode, func(f *os.File) error {
		if st != nil && (st.Uid != 0 || st.Gid != 0) {
			if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return fmt.Errorf("keeping the owner: %w", err)
			}
		}
		_, err := f.Write(data)
		return err
	})
}

// WriteWith is Write for content too large to hold in memory: fill writes
// it into the temporary file it is handed (and may read it back through
// the same file to check it) and must not close it. Everything else is as
// for Write: the mode is set before fill runs, the file is flushed to disk
// after it, and if fill or any later step fails the temporary file is
// removed and path is left as it was.
func WriteWith(path string, mode os.FileMode, fill func(f *os.File) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStale(dir, base)
	tmp, err := os.CreateTemp(dir, tempPrefix(base, os.Getpid())+"*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("writing %s: setting mode: %w", path, err)
	}
	if err = fill(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: flushing: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return SyncDir(dir)
}

// tempPrefix starts the name of a temporary file for base written by the
// process pid.
func tempPrefix(base string, pid int) string {
	return "." + base + ".tmp-" + strconv.Itoa(pid) + "-"
}

// IsTempName reports whether name (a file name, no folder) is that of a
// temporary file Write makes (see tempPrefix), for checks that none is
// left behind.
func IsTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// removeStale deletes the temporary files for base that a writer killed
// before its rename left in dir (a process killed half-way through a write
// cannot remove its own): those named by tempPrefix with the PID of a
// process that no longer runs. So a run after a crash ends with the same
// files as a run that was never interrupted. Failures are ignored: a stale
// file is untidy, not wrong.
func removeStale(dir, base string) {
	prefix := "." + base + ".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// SyncDir flushes a folder so a rename into it, or out of it, survives a
// crash. File systems that cannot sync folders are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flushing folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("flushing folder %s: %w", dir, err)
	}
	return nil
}
