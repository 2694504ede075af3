package etcd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CopyTree copies the folder src to dst, which must not exist yet: folders,
// regular files (synced) and symbolic links, with their modes. It is how
// the etcd data folder is backed up before etcd is upgraded, put back when
// the upgrade is rolled back, and moved aside by a restore when it is a
// mount point.
func CopyTree(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("copying %s: %s exists already", src, dst)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm()) // whatever the umask
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(path, target, info.Mode().Perm())
		default:
			return nil // sockets and the like are not data
		}
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(mode); err != nil { // whatever the umask
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// RestoreTree replaces the content of the folder dst with a copy of
// backup, keeping what dst held in aside (dst + ".failed-" + suffix) so
// nothing is lost. dst is renamed aside when it can be; a dst that is a
// mount point (a disk of its own for etcd's data, common on control-plane
// nodes) cannot be renamed (EBUSY), so it is restored in place
// (RestoreTreeInPlace).
func RestoreTree(backup, dst, suffix string) (aside string, err error) {
	aside = dst + ".failed-" + suffix
	err = os.Rename(dst, aside)
	switch {
	case cannotRename(err):
		return RestoreTreeInPlace(backup, dst, suffix)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("moving %s aside: %w", dst, err)
	}
	if err := CopyTree(backup, dst); err != nil {
		return aside, fmt.Errorf("copying %s back to %s: %w", backup, dst, err)
	}
	return aside, nil
}

// RestoreTreeInPlace is RestoreTree for a dst that stays where it is: its
// content is copied to aside (dst + ".failed-" + suffix), removed, and the
// backup's copied in; dst gets the backup's mode.
func RestoreTreeInPlace(backup, dst, suffix string) (aside string, err error) {
	aside = dst + ".failed-" + suffix
	if err := MoveContent(dst, aside); err != nil {
		return "", err
	}
	return aside, CopyContent(backup, dst)
}

// cannotRename reports whether a rename failed because the folder is a
// mount point (EBUSY) or the destination is on another file system
// (EXDEV): the folder must then stay where it is and have its content
// moved instead.
func cannotRename(err error) bool {
	return errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)
}

// MoveContent moves the content of the folder dir, which stays where it is
// (a mount point cannot be renamed), into the new folder dest: it is
// copied (CopyTree), then removed from dir. When the copy fails, dir is
// left as it was.
func MoveContent(dir, dest string) error {
	if err := CopyTree(dir, dest); err != nil {
		return fmt.Errorf("copying %s aside to %s: %w", dir, dest, err)
	}
	if err := emptyDir(dir); err != nil {
		return fmt.Errorf("emptying %s (copied to %s): %w", dir, dest, err)
	}
	return nil
}

// CopyContent copies every entry of the folder src into the folder dst,
// which must hold none of them, and gives dst src's mode.
func CopyContent(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := CopyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return fmt.Errorf("copying %s back into %s: %w", src, dst, err)
		}
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.Chmod(dst, info.Mode().Perm())
}

// emptyDir removes everything the folder dir holds, and keeps dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
