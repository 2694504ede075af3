package upgrade

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyTree copies the folder src to dst, which must not exist yet: folders,
// regular files (synced) and symbolic links, with their modes. It is how
// the etcd data folder is backed up before etcd is upgraded, and put back
// when the upgrade is rolled back.
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

// RestoreTree replaces the folder dst with a copy of backup: dst is first
// renamed aside (to dst + ".failed-" + suffix) so nothing is lost, then
// backup is copied in.
func RestoreTree(backup, dst, suffix string) (aside string, err error) {
	aside = dst + ".failed-" + suffix
	if err := os.Rename(dst, aside); err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("moving %s aside: %w", dst, err)
	}
	if err := CopyTree(backup, dst); err != nil {
		return aside, fmt.Errorf("copying %s back to %s: %w", backup, dst, err)
	}
	return aside, nil
}
