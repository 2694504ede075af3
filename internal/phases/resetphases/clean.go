package resetphases

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Why hand-written: the deletion must stop at every mount point, found
// without /proc (absent under --rootfs) and including bind mounts of the
// same filesystem. k8s.io/mount-utils answers "is this a mount point"
// from /proc or by comparing device numbers, and the kubelet's own
// one-filesystem RemoveAll lives in k8s.io/kubernetes, compares device
// numbers only and may not be imported. statx's mount ID, read on each
// folder after it is opened, does both.

// maxStackedMounts bounds how many mounts stacked on one path emptyDir
// takes off before it gives up on that path.
const maxStackedMounts = 32

// keptMount is a mount point emptyDir left in place with what it holds.
type keptMount struct {
	path string
	// err is why it could not be unmounted; nil when no unmount was tried.
	err error
}

// KeptMountsError reports the mount points reset found inside the folders
// it empties and left mounted: deleting through them would delete another
// filesystem's files (a pod's volume, the host's data under --rootfs).
type KeptMountsError struct {
	kept []keptMount
}

// Paths returns the mount points that were left in place.
func (e *KeptMountsError) Paths() []string {
	out := make([]string, len(e.kept))
	for i, k := range e.kept {
		out[i] = k.path
	}
	return out
}

func (e *KeptMountsError) Error() string {
	parts := make([]string, len(e.kept))
	for i, k := range e.kept {
		parts[i] = k.path
		if k.err != nil {
			parts[i] += " (unmounting: " + k.err.Error() + ")"
		}
	}
	return fmt.Sprintf("%d mount point(s) left in place with their contents, as deleting through them would delete the mounted filesystem's files: %s; unmount them and run reset again",
		len(e.kept), strings.Join(parts, ", "))
}

// mountKey tells which mount a file is on: the mount ID from statx where
// the kernel gives it (a bind mount of the same filesystem shares the
// device number but not the mount ID), else the device number.
type mountKey struct {
	id       uint64
	hasID    bool
	dev      uint64
	isRoot   bool // statx says the file is the root of a mount
	fileType uint32
}

// sameMount reports whether child is on the parent's mount.
func (parent mountKey) sameMount(child mountKey) bool {
	if child.isRoot {
		return false
	}
	if parent.hasID && child.hasID {
		return parent.id == child.id
	}
	return parent.dev == child.dev
}

// statMount reads the mount of name in dirfd without following a final
// symbolic link or triggering an automount; name "" is dirfd itself.
func statMount(dirfd int, name string) (mountKey, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var stx unix.Statx_t
	err := unix.Statx(dirfd, name, flags, unix.STATX_TYPE|unix.STATX_MNT_ID, &stx)
	if errors.Is(err, unix.ENOSYS) {
		// A kernel before 4.11: the device number is all there is.
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, flags); err != nil {
			return mountKey{}, err
		}
		return mountKey{dev: st.Dev, fileType: st.Mode & unix.S_IFMT}, nil
	}
	if err != nil {
		return mountKey{}, err
	}
	return mountKey{
		id:       stx.Mnt_id,
		hasID:    stx.Mask&unix.STATX_MNT_ID != 0,
		dev:      unix.Mkdev(stx.Dev_major, stx.Dev_minor),
		isRoot:   stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0,
		fileType: uint32(stx.Mode) & unix.S_IFMT,
	}, nil
}

// emptier deletes the contents of folders without ever crossing into
// another mount, and collects the mount points it kept.
type emptier struct {
	kept []keptMount
}

// walk is one emptyDir: unmount, when set, is tried on each mount point
// found (taking off stacked mounts one by one); a mount point it does not
// clear is kept, with everything in it.
type walk struct {
	unmount func(path string) error
	e       *emptier
}

// emptyDir deletes what dir holds and keeps dir itself; a missing dir is
// fine. A symbolic link at dir is followed (a kubelet folder may be a link
// to a larger disk); links inside are deleted, not followed. What is on
// another mount than dir's is never deleted: unmount (nil: none) is tried
// on it, and if it stays a mount point it is kept and listed in e.err().
func (e *emptier) emptyDir(dir string, unmount func(path string) error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	top, err := statMount(fd, "")
	if err != nil {
		return fmt.Errorf("reading the mount of %s: %w", dir, err)
	}
	w := &walk{unmount: unmount, e: e}
	_, err = w.emptyAt(f, dir, top)
	return err
}

// emptyAt deletes the entries of the open folder f (at path) that are on
// mount m, and reports whether it deleted them all.
func (w *walk) emptyAt(f *os.File, path string, m mountKey) (bool, error) {
	names, err := f.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	dirfd := int(f.Fd())
	all := true
	var errs []error
	for _, name := range names {
		p := filepath.Join(path, name)
		gone, err := w.remove(dirfd, name, p, m)
		if err != nil {
			errs = append(errs, err)
		}
		if !gone {
			all = false
		}
	}
	return all, errors.Join(errs...)
}

// remove deletes the entry name of dirfd (at path p) if it and all it
// holds are on mount m, and reports whether it is gone.
func (w *walk) remove(dirfd int, name, p string, m mountKey) (bool, error) {
	st, err := statMount(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", p, err)
	}
	if !m.sameMount(st) {
		var cleared bool
		if st, cleared, err = w.takeOff(dirfd, name, p, m); !cleared {
			return false, err
		}
	}
	if st.fileType != unix.S_IFDIR {
		if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return false, &fs.PathError{Op: "unlink", Path: p, Err: err}
		}
		return true, nil
	}
	cfd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	child := os.NewFile(uintptr(cfd), p)
	defer child.Close()
	// The folder opened is the one whose mount counts: something mounted
	// on the path since it was looked at is seen here.
	opened, err := statMount(cfd, "")
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", p, err)
	}
	if !m.sameMount(opened) {
		w.e.kept = append(w.e.kept, keptMount{path: p, err: errors.New("mounted while reset ran")})
		return false, nil
	}
	all, err := w.emptyAt(child, p, m)
	if !all || err != nil {
		return false, err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return false, &fs.PathError{Op: "rmdir", Path: p, Err: err}
	}
	return true, nil
}

// takeOff unmounts what is mounted on p until p is on mount m again, and
// returns p's new state and true; false when p stays a mount point (no
// unmount, or it failed), which is then kept, or p could not be read.
func (w *walk) takeOff(dirfd int, name, p string, m mountKey) (mountKey, bool, error) {
	if w.unmount == nil {
		w.e.kept = append(w.e.kept, keptMount{path: p})
		return mountKey{}, false, nil
	}
	for i := 0; i < maxStackedMounts; i++ {
		if err := w.unmount(p); err != nil {
			w.e.kept = append(w.e.kept, keptMount{path: p, err: err})
			return mountKey{}, false, nil
		}
		st, err := statMount(dirfd, name)
		if errors.Is(err, unix.ENOENT) {
			return mountKey{}, true, nil // gone: nothing left to delete
		}
		if err != nil {
			return mountKey{}, false, fmt.Errorf("reading %s: %w", p, err)
		}
		if m.sameMount(st) {
			return st, true, nil
		}
	}
	w.e.kept = append(w.e.kept, keptMount{path: p, err: fmt.Errorf("still a mount point after %d unmounts", maxStackedMounts)})
	return mountKey{}, false, nil
}

// err returns a *KeptMountsError listing the mount points kept so far, or
// nil.
func (e *emptier) err() error {
	if len(e.kept) == 0 {
		return nil
	}
	return &KeptMountsError{kept: e.kept}
}
