package etcd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
)

// treeEntry is one entry of a folder tree: a folder (data "/"), a symbolic
// link (data "-> target") or a regular file.
type treeEntry struct {
	path string
	mode os.FileMode
	data string
}

// etcdTree is a small etcd data folder.
func etcdTree(db string) []treeEntry {
	return []treeEntry{
		{"member", 0o700, "/"},
		{"member/snap", 0o750, "/"},
		{"member/snap/db", 0o600, db},
		{"member/wal", 0o700, "/"},
		{"member/wal/0000000000000000-0000000000000000.wal", 0o640, "wal of " + db},
		{"member/empty", 0o755, "/"},
		{"version.txt", 0o644, "3.6.7"},
		{"current", 0, "-> member/snap/db"},
	}
}

func writeTree(t *testing.T, root string, entries []treeEntry) {
	t.Helper()
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		var err error
		switch {
		case e.data == "/":
			err = os.Mkdir(p, e.mode)
			if err == nil {
				err = os.Chmod(p, e.mode)
			}
		case strings.HasPrefix(e.data, "-> "):
			err = os.Symlink(strings.TrimPrefix(e.data, "-> "), p)
		default:
			err = os.WriteFile(p, []byte(e.data), e.mode)
			if err == nil {
				err = os.Chmod(p, e.mode)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree wants root to hold exactly entries.
func checkTree(t *testing.T, root string, entries []treeEntry) {
	t.Helper()
	want := map[string]treeEntry{}
	for _, e := range entries {
		want[e.path] = e
	}
	seen := 0
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e, ok := want[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("%s: unexpected entry %s", root, rel)
			return nil
		}
		seen++
		switch {
		case e.data == "/":
			if !info.IsDir() {
				t.Errorf("%s is not a folder", p)
			}
		case strings.HasPrefix(e.data, "-> "):
			if info.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is not a symbolic link (%v)", p, info.Mode())
			} else if link, _ := os.Readlink(p); link != strings.TrimPrefix(e.data, "-> ") {
				t.Errorf("%s links to %q, want %q", p, link, strings.TrimPrefix(e.data, "-> "))
			}
			return nil
		default:
			if !info.Mode().IsRegular() {
				t.Errorf("%s is not a regular file", p)
			} else if b, _ := os.ReadFile(p); string(b) != e.data {
				t.Errorf("%s holds %q, want %q", p, b, e.data)
			}
		}
		if info.Mode().Perm() != e.mode {
			t.Errorf("%s has mode %v, want %v", p, info.Mode().Perm(), e.mode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(entries) {
		t.Errorf("%s holds %d of the %d entries", root, seen, len(entries))
	}
}

func TestCopyTree(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "etcd"), filepath.Join(dir, "backup", "etcd")
	writeTree(t, src, etcdTree("data v1"))
	if err := os.Mkdir(filepath.Join(dir, "backup"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := etcd.CopyTree(src, dst); err != nil {
		t.Fatalf("CopyTree: %v", err)
	}
	checkTree(t, dst, etcdTree("data v1"))
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the copy's top folder: %v, %v; want mode 0700", st.Mode().Perm(), err)
	}
	// The source is untouched.
	checkTree(t, src, etcdTree("data v1"))
}

func TestCopyTreeRefusesExistingDestination(t *testing.T) {
	for _, existing := range []string{"folder", "file", "link"} {
		t.Run(existing, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "etcd"), filepath.Join(dir, "copy")
			writeTree(t, src, etcdTree("data"))
			var err error
			switch existing {
			case "folder":
				err = os.Mkdir(dst, 0o700)
			case "file":
				err = os.WriteFile(dst, []byte("keep"), 0o600)
			case "link":
				err = os.Symlink(filepath.Join(dir, "nowhere"), dst)
			}
			if err != nil {
				t.Fatal(err)
			}
			err = etcd.CopyTree(src, dst)
			if err == nil || !strings.Contains(err.Error(), "exists already") {
				t.Fatalf("CopyTree onto an existing %s = %v, want an error", existing, err)
			}
			if existing == "folder" {
				if entries, _ := os.ReadDir(dst); len(entries) != 0 {
					t.Errorf("CopyTree wrote into the existing folder: %v", entries)
				}
			}
			if existing == "file" {
				if b, _ := os.ReadFile(dst); string(b) != "keep" {
					t.Errorf("the existing file now holds %q", b)
				}
			}
		})
	}
}

func TestCopyTreeMissingSource(t *testing.T) {
	dir := t.TempDir()
	if err := etcd.CopyTree(filepath.Join(dir, "none"), filepath.Join(dir, "copy")); err == nil {
		t.Fatal("CopyTree of a missing folder succeeded")
	}
}

// restoreFolders makes a backup folder holding etcdTree(backupMark) and,
// unless dataMark is "", a data folder holding etcdTree(dataMark).
func restoreFolders(t *testing.T, backupMark, dataMark string) (backup, data string) {
	t.Helper()
	dir := t.TempDir()
	backup, data = filepath.Join(dir, "backup"), filepath.Join(dir, "etcd")
	writeTree(t, backup, etcdTree(backupMark))
	if dataMark != "" {
		writeTree(t, data, etcdTree(dataMark))
	}
	return backup, data
}

// failedUpgradeFolders are the folders after an etcd upgrade that failed:
// the backup from before it, and the data it left, with a file the backup
// does not have (member/extra).
func failedUpgradeFolders(t *testing.T) (backup, data string) {
	t.Helper()
	backup, data = restoreFolders(t, "before the upgrade", "after the failed upgrade")
	if err := os.WriteFile(filepath.Join(data, "member", "extra"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return backup, data
}

// checkRestored checks the folders of failedUpgradeFolders after a
// restore that moved the data aside to aside.
func checkRestored(t *testing.T, backup, data, aside string) {
	t.Helper()
	checkTree(t, data, etcdTree("before the upgrade"))
	checkTree(t, aside, append(etcdTree("after the failed upgrade"), treeEntry{"member/extra", 0o600, "x"}))
	checkTree(t, backup, etcdTree("before the upgrade"))
}

func TestRestoreTree(t *testing.T) {
	backup, data := failedUpgradeFolders(t)

	aside, err := etcd.RestoreTree(backup, data, "2026-05-01-10-00-00")
	if err != nil {
		t.Fatalf("RestoreTree: %v", err)
	}
	if want := data + ".failed-2026-05-01-10-00-00"; aside != want {
		t.Errorf("moved aside to %s, want %s", aside, want)
	}
	checkRestored(t, backup, data, aside)
}

func TestRestoreTreeMissingData(t *testing.T) {
	backup, data := restoreFolders(t, "before", "")
	aside, err := etcd.RestoreTree(backup, data, "s")
	if err != nil {
		t.Fatalf("RestoreTree without a data folder: %v", err)
	}
	if _, err := os.Lstat(aside); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v) though there was nothing to move aside", aside, err)
	}
	checkTree(t, data, etcdTree("before"))
}

func TestRestoreTreeAsideTaken(t *testing.T) {
	backup, data := restoreFolders(t, "before", "after")
	// A non-empty folder where the data would be moved aside: the rename
	// fails and nothing is touched.
	writeTree(t, data+".failed-s", etcdTree("older failure"))
	if _, err := etcd.RestoreTree(backup, data, "s"); err == nil {
		t.Fatal("RestoreTree succeeded though the data could not be moved aside")
	}
	checkTree(t, data, etcdTree("after"))
}

// TestRestoreTreeInPlace: the restore of a data folder that is a mount
// point (which cannot be renamed) keeps the folder itself.
func TestRestoreTreeInPlace(t *testing.T) {
	backup, data := failedUpgradeFolders(t)
	before, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	aside, err := etcd.RestoreTreeInPlace(backup, data, "s")
	if err != nil {
		t.Fatalf("RestoreTreeInPlace: %v", err)
	}
	after, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the data folder itself was replaced")
	}
	checkRestored(t, backup, data, aside)
}
