package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesContentAndMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "admin.conf")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "new" {
		t.Fatalf("content %q, want new", b)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A folder where the file should be makes the rename fail.
	target := filepath.Join(dir, "sub")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("new"), 0o600); err == nil {
		t.Fatal("expected an error writing over a non-empty folder")
	}
	b, _ := os.ReadFile(p)
	if string(b) != "old" {
		t.Fatalf("old file changed: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "f" && e.Name() != "sub" {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestWriteMissingFolder(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "such"), nil, 0o600); err == nil {
		t.Fatal("expected an error for a missing folder")
	}
}

func TestWriteWithFailingFillKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "snapshot.db")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteWith(p, 0o600, func(f *os.File) error {
		if _, err := f.Write([]byte("half of the new")); err != nil {
			return err
		}
		return errors.New("stream cut")
	})
	if err == nil || !strings.Contains(err.Error(), "stream cut") {
		t.Fatalf("WriteWith = %v, want the fill's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("old file changed: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}

func TestWriteWithStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	err := WriteWith(p, 0o640, func(f *os.File) error {
		for range 3 {
			if _, err := f.Write([]byte("chunk;")); err != nil {
				return err
			}
		}
		// What was written can be read back through the same file.
		got := make([]byte, 6)
		if _, err := f.ReadAt(got, 6); err != nil || string(got) != "chunk;" {
			return errors.New("cannot read back what was written")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "chunk;chunk;chunk;" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("content %q, mode %v", b, fi.Mode().Perm())
	}
}

// TestWriteRemovesWhatAKilledWriterLeft: temporary files of the same
// target left by a process that no longer runs are removed; those of a
// running process, and of other targets, are not.
func TestWriteRemovesWhatAKilledWriterLeft(t *testing.T) {
	dir := t.TempDir()
	// A PID no process has: beyond the kernel's pid_max.
	const gone = 1 << 30
	stale := filepath.Join(dir, tempPrefix("ca.key", gone)+"123")
	running := filepath.Join(dir, tempPrefix("ca.key", 1)+"456") // init runs
	other := filepath.Join(dir, tempPrefix("ca.crt", gone)+"789")
	for _, p := range []string{stale, running, other} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(filepath.Join(dir, "ca.key"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, running: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// IsTempName must know the names Write gives its temporary files, and
// nothing else.
func TestIsTempName(t *testing.T) {
	if name := tempPrefix("ca.key", 42) + "123"; !IsTempName(name) {
		t.Errorf("%q is a temporary file's name", name)
	}
	for _, name := range []string{"ca.key", ".kube", "ca.key.tmp-1-2"} {
		if IsTempName(name) {
			t.Errorf("%q is not a temporary file's name", name)
		}
	}
}

// TestReplaceKeepsOwner: a file another user owns stays theirs, with the
// new content and mode; a new file is the writer's. Needs root to chown.
func TestReplaceKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "server.key")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if b, _ := os.ReadFile(p); string(b) != "new" || st.Uid != 4242 || st.Gid != 4343 || fi.Mode().Perm() != 0o640 {
		t.Errorf("content %q owner %d:%d mode %v, want new 4242:4343 0640", b, st.Uid, st.Gid, fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "new.key")
	if err := Replace(fresh, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(fresh)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("a new file owned by %d, want root", st.Uid)
	}
}

// TestWriteLike: the file gets the mode and owner of the file it takes
// after, or the default mode and root's ownership when there is none.
func TestWriteLike(t *testing.T) {
	dir := t.TempDir()
	like := filepath.Join(dir, "kubelet.conf")
	if err := os.WriteFile(like, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	owned := os.Geteuid() == 0
	if owned {
		if err := os.Chown(like, 4242, 4343); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "kubelet-new.conf")
	if err := WriteLike(p, []byte("new"), like, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if b, _ := os.ReadFile(p); string(b) != "new" || fi.Mode().Perm() != 0o640 || (owned && (st.Uid != 4242 || st.Gid != 4343)) {
		t.Errorf("content %q owner %d:%d mode %v, want new 4242:4343 0640", b, st.Uid, st.Gid, fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "fresh.key")
	if err := WriteLike(fresh, []byte("x"), filepath.Join(dir, "absent"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(fresh)
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != uint32(os.Geteuid()) {
		t.Errorf("a file without a model: mode %v owner %d, want 0600 and the writer", fi.Mode().Perm(), st.Uid)
	}
}
