package upgrade

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EtcdDataFixture is a data folder written by the new etcd ("new") and
// the copy the upgrade took before ("old"); exported for the tests of
// package upgrade_test.
func EtcdDataFixture(t *testing.T, members int) *EtcdData {
	t.Helper()
	dir := t.TempDir()
	e := &EtcdData{
		Backup:  filepath.Join(dir, "tmp", "kubeadm-backup-etcd-2026-11-29-00-10-00", "etcd"),
		DataDir: filepath.Join(dir, "var", "lib", "etcd"),
		Members: members,
		Stamp:   "2026-11-29-00-10-00",
		Out:     &bytes.Buffer{},
	}
	for path, content := range map[string]string{e.Backup: "old", e.DataDir: "new"} {
		if err := os.MkdirAll(filepath.Join(path, "member"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(path, "member", "db"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// EtcdDataOf is what the db file of an EtcdDataFixture folder holds (""
// when none).
func EtcdDataOf(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "member", "db"))
	return string(b)
}

// TestEtcdDataRestoreDue: etcd's data goes back when etcd's own upgrade
// failed, or when etcd upgraded fine and is its cluster's only member;
// a member with peers keeps its data. A missing backup or an unknown
// cluster size keeps the data and says why.
func TestEtcdDataRestoreDue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ownFailed bool
		members   int
		noBackup  bool
		want      bool
		wantErr   string
	}{
		{name: "own failure, single member", ownFailed: true, members: 1, want: true},
		{name: "own failure, three members", ownFailed: true, members: 3, want: true},
		{name: "own failure, size unknown", ownFailed: true, members: 0, want: true},
		{name: "own failure, backup gone", ownFailed: true, members: 1, noBackup: true, wantErr: "is gone"},
		{name: "later failure, single member", members: 1, want: true},
		{name: "later failure, single member, backup gone", members: 1, noBackup: true, wantErr: "is gone"},
		{name: "later failure, three members", members: 3, want: false},
		{name: "later failure, three members, backup gone", members: 3, noBackup: true, want: false},
		{name: "later failure, size unknown", members: 0, wantErr: "size of the etcd cluster before the upgrade is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := EtcdDataFixture(t, tc.members)
			if tc.noBackup {
				if err := os.RemoveAll(e.Backup); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.RestoreDue(tc.ownFailed)
			if got != tc.want {
				t.Errorf("RestoreDue(%v) = %v, want %v", tc.ownFailed, got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("RestoreDue: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("RestoreDue error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestEtcdDataRestore: the copy takes the data folder's place; the data
// it replaces is kept beside it, and Chown runs after the copy.
func TestEtcdDataRestore(t *testing.T) {
	e := EtcdDataFixture(t, 1)
	chowned := false
	e.Chown = func() error {
		chowned = EtcdDataOf(e.DataDir) == "old"
		return nil
	}
	if err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := EtcdDataOf(e.DataDir); got != "old" {
		t.Errorf("the data folder holds %q, want the backup's", got)
	}
	aside := e.DataDir + ".failed-" + e.Stamp
	if got := EtcdDataOf(aside); got != "new" {
		t.Errorf("%s holds %q, want the replaced data", aside, got)
	}
	if got := EtcdDataOf(e.Backup); got != "old" {
		t.Errorf("the backup holds %q after the restore", got)
	}
	if !chowned {
		t.Error("Chown did not run after the copy")
	}
	if out := e.Out.(*bytes.Buffer).String(); !strings.Contains(out, aside) {
		t.Errorf("the output does not name %s:\n%s", aside, out)
	}
}
