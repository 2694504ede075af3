package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/etcd/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// fixture is a snapshot etcdctl saved from a fresh single-member etcd
// v3.6 after three puts (see testdata/README.md).
const (
	fixture         = "testdata/three-keys.db"
	fixtureRevision = 4
)

func readFixture(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// withDigest returns db followed by its SHA-256, as etcd streams it.
func withDigest(db []byte) []byte {
	sum := sha256.Sum256(db)
	return append(append([]byte(nil), db...), sum[:]...)
}

// fakeSnapshotter answers Save's requests: member 7 named "cp-1" streams stream,
// then streamErr (io.EOF when nil).
type fakeSnapshotter struct {
	stream    []byte
	streamErr error
	statusErr error
	listErr   error
	snapErr   error
	memberID  uint64
	// silent: the snapshot never starts; stall: it stops after stream.
	silent, stall bool
}

func (f *fakeSnapshotter) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	id := f.memberID
	if id == 0 {
		id = 7
	}
	return &clientv3.StatusResponse{Header: &etcdserverpb.ResponseHeader{MemberId: id}}, nil
}

func (f *fakeSnapshotter) MemberList(ctx context.Context, _ ...clientv3.OpOption) (*clientv3.MemberListResponse, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	return &clientv3.MemberListResponse{Members: []*etcdserverpb.Member{{ID: 3, Name: "cp-0"}, {ID: 7, Name: "cp-1"}}}, nil
}

func (f *fakeSnapshotter) SnapshotWithVersion(ctx context.Context) (*clientv3.SnapshotResponse, error) {
	if f.snapErr != nil {
		return nil, f.snapErr
	}
	if f.silent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var end io.Reader = errReader{f.streamErr}
	switch {
	case f.stall:
		end = stalledReader{ctx}
	case f.streamErr == nil:
		end = errReader{io.EOF}
	}
	r := io.MultiReader(bytes.NewReader(f.stream), end)
	return &clientv3.SnapshotResponse{Version: "3.6.0", Snapshot: io.NopCloser(r)}, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// stalledReader sends nothing until its context ends, like a gRPC stream
// whose server stopped sending.
type stalledReader struct{ ctx context.Context }

func (r stalledReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

// fakeClock advances by a second at every reading.
func fakeClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// entries lists dir's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

func TestCheckFixture(t *testing.T) {
	info, err := Check(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != fixture || info.Size != 20512 || info.Revision != fixtureRevision || info.Member != "" || info.Took != 0 {
		t.Errorf("Check = %+v, want path %s, size 20512, revision %d", info, fixture, fixtureRevision)
	}
}

func TestCheckRejects(t *testing.T) {
	good := readFixture(t)
	damaged := append([]byte(nil), good...)
	damaged[100] ^= 0xff
	junk := withDigest(bytes.Repeat([]byte("not a bbolt page "), 4096/17+1)[:4096])
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.db"), "no such file"},
		{"folder", dir, "not a regular file"},
		{"empty", write("empty.db", nil), "not the size of an etcd snapshot"},
		{"without digest", write("nodigest.db", good[:len(good)-sha256.Size]), "not the size of an etcd snapshot"},
		{"truncated", write("truncated.db", good[:len(good)-1]), "not the size of an etcd snapshot"},
		{"damaged", write("damaged.db", damaged), "the snapshot is damaged"},
		{"not a database", write("junk.db", junk), "reading the database in the snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSaveWritesCheckedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backups", "today", "snapshot.db")
	api := &fakeSnapshotter{stream: readFixture(t)}
	info, err := save(context.Background(), api, "https://10.0.0.1:2379", time.Second, time.Minute, path, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	want := Info{Path: path, Size: 20512, Revision: fixtureRevision, Member: "cp-1", Took: time.Second}
	if *info != want {
		t.Errorf("Info = %+v, want %+v", *info, want)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, api.stream) {
		t.Fatalf("file content differs from the stream (%v)", err)
	}
	for p, mode := range map[string]os.FileMode{
		path:                                FileMode,
		filepath.Dir(path):                  DirMode,
		filepath.Join(dir, "backups"):       DirMode,
		filepath.Join(dir, "backups/today"): DirMode,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
	if names := entries(t, filepath.Dir(path)); len(names) != 1 {
		t.Errorf("files next to the snapshot: %v, want only snapshot.db", names)
	}
}

func TestSaveLeavesNothingOnFailure(t *testing.T) {
	good := readFixture(t)
	damaged := append([]byte(nil), good...)
	damaged[len(damaged)-1] ^= 1
	for _, tc := range []struct {
		name string
		api  *fakeSnapshotter
		want string
	}{
		{"status fails", &fakeSnapshotter{statusErr: errors.New("connection refused")}, "connection refused"},
		{"member list fails", &fakeSnapshotter{listErr: errors.New("no leader")}, "listing the members: no leader"},
		{"unknown member", &fakeSnapshotter{memberID: 99}, "not in the member list"},
		{"snapshot refused", &fakeSnapshotter{snapErr: errors.New("permission denied")}, "asking https://10.0.0.1:2379 for a snapshot: permission denied"},
		{"stream cut", &fakeSnapshotter{stream: good[:8192], streamErr: errors.New("stream reset")}, "(8192 bytes so far): stream reset"},
		{"stream cut cleanly", &fakeSnapshotter{stream: good[:8192]}, "not the size of an etcd snapshot"},
		{"stream damaged", &fakeSnapshotter{stream: damaged}, "the snapshot is damaged"},
		{"stream empty", &fakeSnapshotter{}, "not the size of an etcd snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "new", "snapshot.db")
			_, err := save(context.Background(), tc.api, "https://10.0.0.1:2379", time.Second, time.Minute, path, fakeClock())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("save = %v, want an error containing %q", err, tc.want)
			}
			if names := entries(t, dir); len(names) != 0 {
				t.Errorf("left behind: %v", names)
			}
		})
	}
}

// TestSaveGivesUpOnAStalledMember: a member that stops sending, before
// the first piece of the snapshot or in the middle, ends the transfer
// after the stall timeout instead of holding the command until the
// caller's deadline (if it has one); nothing is left behind.
func TestSaveGivesUpOnAStalledMember(t *testing.T) {
	const stall = 200 * time.Millisecond
	for _, tc := range []struct {
		name string
		api  *fakeSnapshotter
	}{
		{"nothing sent", &fakeSnapshotter{silent: true}},
		{"stops halfway", &fakeSnapshotter{stream: readFixture(t)[:8192], stall: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "new", "snapshot.db")
			res := make(chan error, 1)
			go func() {
				_, err := save(context.Background(), tc.api, "https://10.0.0.1:2379", time.Second, stall, path, fakeClock())
				res <- err
			}()
			select {
			case err := <-res:
				if err == nil || !strings.Contains(err.Error(), "the member sent nothing for 200ms") {
					t.Fatalf("save = %v, want the stall named", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("save still waits after 30s")
			}
			if names := entries(t, dir); len(names) != 0 {
				t.Errorf("left behind: %v", names)
			}
		})
	}
}

func TestSaveBadPaths(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.db")
	if err := os.WriteFile(existing, []byte("an older snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := &fakeSnapshotter{stream: readFixture(t)}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"empty", "", "no file path given"},
		{"existing file", existing, "already exists"},
		{"under a file", filepath.Join(existing, "snapshot.db"), "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := save(context.Background(), api, "https://10.0.0.1:2379", time.Second, time.Minute, tc.path, fakeClock())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("save = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if got, _ := os.ReadFile(existing); string(got) != "an older snapshot" {
		t.Errorf("the existing file was changed: %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("left behind: %v", names)
	}
}

func TestSaveChecksItsConfiguration(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.db")
	good := Config{
		Endpoints:   []string{"https://127.0.0.1:2379"},
		CAFile:      filepath.Join(dir, "ca.crt"),
		CertFile:    filepath.Join(dir, "client.crt"),
		KeyFile:     filepath.Join(dir, "client.key"),
		DialTimeout: time.Second, CallTimeout: time.Second, RetryTimeout: time.Second,
	}
	noEndpoint := good
	noEndpoint.Endpoints = nil
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no endpoint", noEndpoint, "no etcd endpoint given"},
		{"missing certificates", good, "reading the etcd CA certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Save(context.Background(), tc.cfg, path, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Save = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}

func restoreOptions(dataDir string) RestoreOptions {
	return RestoreOptions{
		Snapshot: fixture,
		DataDir:  dataDir,
		Name:     "cp-1",
		PeerURLs: []string{"https://10.0.0.1:2380"},
	}
}

func TestRestoreBuildsDataFolder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dataDir string)
	}{
		{"missing folder and parent", func(*testing.T, string) {}},
		{"empty folder", func(t *testing.T, dataDir string) {
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		// A data folder on a disk of its own: filled in place.
		{"empty mount point", func(t *testing.T, dataDir string) {
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				t.Fatal(err)
			}
			etcdtest.BindMount(t, dataDir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "var", "lib")
			dataDir := filepath.Join(parent, "etcd")
			tc.setup(t, dataDir)
			if err := Restore(context.Background(), restoreOptions(dataDir)); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dataDir, "member", "snap", "db")
			st, err := snapshot.NewV3(zap.NewNop()).Status(db)
			if err != nil {
				t.Fatalf("reading the restored database: %v", err)
			}
			if st.Revision != fixtureRevision {
				t.Errorf("restored revision %d, want %d", st.Revision, fixtureRevision)
			}
			if wal := entries(t, filepath.Join(dataDir, "member", "wal")); len(wal) == 0 {
				t.Error("the restored data folder has no write-ahead log")
			}
			if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != DirMode {
				t.Errorf("data folder: %v, %v; want mode %v", fi.Mode(), err, DirMode)
			}
			if names := entries(t, parent); len(names) != 1 || names[0] != "etcd" {
				t.Errorf("next to the data folder: %v, want only etcd", names)
			}
			if names := entries(t, dataDir); len(names) != 1 || names[0] != "member" {
				t.Errorf("in the data folder: %v, want only member", names)
			}
		})
	}
}

func TestRestoreRefuses(t *testing.T) {
	good := readFixture(t)
	damaged := append([]byte(nil), good...)
	damaged[5000] ^= 0xff
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, o *RestoreOptions)
		ctx    func() context.Context
		want   string
		intact bool // the data folder exists before and must be unchanged
	}{
		{name: "non-empty data folder", intact: true, want: "is not empty (it has member)", setup: func(t *testing.T, o *RestoreOptions) {
			if err := os.MkdirAll(filepath.Join(o.DataDir, "member", "wal"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "data folder is a file", intact: true, want: "is a file", setup: func(t *testing.T, o *RestoreOptions) {
			if err := os.WriteFile(o.DataDir, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing snapshot", want: "no such file", setup: func(t *testing.T, o *RestoreOptions) {
			o.Snapshot = filepath.Join(filepath.Dir(o.DataDir), "none.db")
		}},
		// etcd's restore compares the copy it makes with the digest.
		{name: "damaged snapshot", want: "expected sha256", setup: func(t *testing.T, o *RestoreOptions) {
			o.Snapshot = filepath.Join(t.TempDir(), "damaged.db")
			if err := os.WriteFile(o.Snapshot, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "not a database", want: "invalid database", setup: func(t *testing.T, o *RestoreOptions) {
			// Sectors of anything with the right digest: only etcd's
			// storage, opening the copy, can tell.
			junk := bytes.Repeat([]byte("not a bbolt page "), 4*sectorSize/16)[:4*sectorSize]
			sum := sha256.Sum256(junk)
			o.Snapshot = filepath.Join(t.TempDir(), "junk.db")
			if err := os.WriteFile(o.Snapshot, append(junk, sum[:]...), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "snapshot without digest", want: "was it copied from a data folder", setup: func(t *testing.T, o *RestoreOptions) {
			o.Snapshot = filepath.Join(t.TempDir(), "copied.db")
			if err := os.WriteFile(o.Snapshot, good[:len(good)-sha256.Size], 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no name", want: "no member name given", setup: func(t *testing.T, o *RestoreOptions) { o.Name = "" }},
		{name: "no peer URL", want: "no peer URL given", setup: func(t *testing.T, o *RestoreOptions) { o.PeerURLs = nil }},
		{name: "bad peer URL", want: "want a scheme", setup: func(t *testing.T, o *RestoreOptions) { o.PeerURLs = []string{"10.0.0.1:2380"} }},
		{name: "no data folder", want: "no data folder given", setup: func(t *testing.T, o *RestoreOptions) { o.DataDir = "" }},
		{name: "cancelled", want: "context canceled", ctx: func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			o := restoreOptions(filepath.Join(parent, "etcd"))
			if tc.setup != nil {
				tc.setup(t, &o)
			}
			ctx := context.Background()
			if tc.ctx != nil {
				ctx = tc.ctx()
			}
			before := entries(t, parent)
			err := Restore(ctx, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore = %v, want an error containing %q", err, tc.want)
			}
			t.Logf("Restore: %v", err)
			after := entries(t, parent)
			if strings.Join(before, ",") != strings.Join(after, ",") {
				t.Errorf("folder of the data folder was %v, is %v after the failure", before, after)
			}
			if tc.intact {
				if fi, err := os.Stat(o.DataDir); err != nil {
					t.Errorf("the data folder: %v", err)
				} else if fi.IsDir() && len(entries(t, filepath.Join(o.DataDir, "member"))) != 1 {
					t.Errorf("the data folder's content changed")
				}
			}
		})
	}
}

// etcd's code ends the process on a fatal error and panics on others;
// under etcdLog's logger both become an error that says what it logged.
func TestEtcdLogRecovers(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(lg *zap.Logger) error
		want string
	}{
		{"fatal", func(lg *zap.Logger) error {
			lg.Info("not kept")
			lg.Fatal("cannot go on", zap.String("why", "broken"))
			return nil
		}, `etcd failed on the snapshot's data: cannot go on {"why": "broken"}`},
		{"panic", func(lg *zap.Logger) error {
			lg.Warn("first")
			lg.Panic("failed to open database", zap.Error(errors.New("invalid database")))
			return nil
		}, `etcd failed on the snapshot's data: failed to open database {"error": "invalid database"}`},
		{"bare panic", func(*zap.Logger) error { panic("index out of range") }, "etcd failed on the snapshot's data: index out of range"},
		{"error", func(*zap.Logger) error { return errors.New("plain") }, "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &etcdLog{}
			err := l.recovered(func() error { return tc.f(l.logger()) })
			if err == nil || err.Error() != tc.want {
				t.Errorf("recovered = %v, want %q", err, tc.want)
			}
		})
	}
}
