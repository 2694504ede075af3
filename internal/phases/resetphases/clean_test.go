package resetphases

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// bindMount mounts src on target (made if missing) for the test's
// duration; the test is skipped where mounting is not allowed.
func bindMount(t *testing.T, src, target string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("mounting is not allowed here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 8; i++ {
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
				return // EINVAL: not a mount point any more; ENOENT: gone
			}
		}
	})
}

// volume lays out a file outside the node's root, standing for a pod's
// volume, and returns the folder and the file.
func volume(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(file, []byte("important\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// TestCleanupNodeNeverDeletesThroughAMount is issue 29's first finding: a
// volume the kubelet left mounted (listing the mounts failed, as under
// --rootfs without /proc, or the unmount was refused with EBUSY) must
// keep its files; everything else is deleted and the run fails naming the
// mount point. The bind mount is of the same filesystem, so only the
// mount ID tells it apart.
func TestCleanupNodeNeverDeletesThroughAMount(t *testing.T) {
	busy := func(string, int) error { return unix.EBUSY }
	noProc := func() ([]string, error) {
		return nil, errors.New("open /proc/self/mountinfo: no such file or directory")
	}
	cases := []struct {
		name    string
		mounts  func(v string) func() ([]string, error)
		unmount func(string, int) error
		// inPKI mounts the volume in the certificates folder, which reset
		// empties but never unmounts in.
		inPKI       bool
		wantKept    bool
		wantWarning string
	}{
		{
			name:        "listing fails, unmount refused",
			mounts:      func(string) func() ([]string, error) { return noProc },
			unmount:     busy,
			wantKept:    true,
			wantWarning: "listing mounts",
		},
		{
			name:     "listed, unmount refused",
			mounts:   func(v string) func() ([]string, error) { return func() ([]string, error) { return []string{v}, nil } },
			unmount:  busy,
			wantKept: true,
		},
		{
			name:     "listed, unmount claims success but the mount stays",
			mounts:   func(v string) func() ([]string, error) { return func() ([]string, error) { return []string{v}, nil } },
			unmount:  func(string, int) error { return nil },
			wantKept: true,
		},
		{
			name:        "listing fails, unmount works",
			mounts:      func(string) func() ([]string, error) { return noProc },
			unmount:     unix.Unmount,
			wantWarning: "listing mounts",
		},
		{
			name:     "a mount in the certificates folder",
			mounts:   func(string) func() ([]string, error) { return func() ([]string, error) { return nil, nil } },
			unmount:  unix.Unmount,
			inPKI:    true,
			wantKept: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, root := testNode(t)
			src, data := volume(t)
			v := filepath.Join(d.KubeletDir, "pods/p/volumes/v")
			if tc.inPKI {
				v = filepath.Join(d.CertDir, "mounted")
			}
			bindMount(t, src, v)
			t.Logf("bind mount on the same device as its parent: %v", statDev(t, src) == statDev(t, filepath.Dir(v)))
			d.Mounts = tc.mounts(v)
			d.Unmount = tc.unmount

			err := runCleanupNode(context.Background(), d)

			if _, statErr := os.Stat(data); statErr != nil {
				t.Fatalf("the volume's file was deleted through the mount: %v", statErr)
			}
			out := d.Out.(interface{ String() string }).String()
			if tc.wantWarning != "" && !strings.Contains(out, tc.wantWarning) {
				t.Errorf("no warning %q in:\n%s", tc.wantWarning, out)
			}
			if tc.wantKept {
				if err == nil || !strings.Contains(err.Error(), v) || !strings.Contains(err.Error(), "unmount them and run reset again") {
					t.Fatalf("err = %v, want one naming the mount point %s", err, v)
				}
				if _, statErr := os.Stat(filepath.Join(v, "data.txt")); statErr != nil {
					t.Errorf("the mount point was not kept mounted: %v", statErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if _, statErr := os.Stat(v); !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("the unmounted folder was not deleted: %v", statErr)
				}
			}
			// Everything else is deleted all the same.
			for _, gone := range []string{"var/lib/kubelet/config.yaml", "var/lib/kubelet/pki", "etc/kubernetes/pki/ca.crt", "etc/kubernetes/pki/etcd", "etc/kubernetes/manifests/kube-apiserver.yaml", "etc/kubernetes/admin.conf"} {
				if _, statErr := os.Stat(filepath.Join(root, gone)); !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("%s was not deleted: %v", gone, statErr)
				}
			}
		})
	}
}

func statDev(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// TestEmptyDir: links are deleted, not followed; a folder given as a link
// is followed; nested folders go; a missing folder is fine.
func TestEmptyDir(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	dir := filepath.Join(base, "real")
	for _, p := range []string{"outside/keep.txt", "real/a/b/c.txt", "real/f.txt"} {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "kubelet")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	var e emptier
	if err := e.emptyDir(link, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.emptyDir(filepath.Join(base, "missing"), nil); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("left %v, %v", entries, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep.txt")); err != nil {
		t.Errorf("a link was followed: %v", err)
	}
	if err := e.err(); err != nil {
		t.Errorf("kept mounts without any mount: %v", err)
	}
}

// TestEmptyDirTakesOffStackedMounts: two mounts on one path are both
// taken off before the folder is deleted; the files of both survive.
func TestEmptyDirTakesOffStackedMounts(t *testing.T) {
	dir := t.TempDir()
	src1, data1 := volume(t)
	src2, data2 := volume(t)
	v := filepath.Join(dir, "pods/p/volumes/v")
	bindMount(t, src1, v)
	bindMount(t, src2, v)
	var calls int
	var e emptier
	err := e.emptyDir(dir, func(p string) error {
		calls++
		return unix.Unmount(p, unix.UMOUNT_NOFOLLOW)
	})
	if err != nil || e.err() != nil {
		t.Fatalf("emptyDir: %v, kept: %v", err, e.err())
	}
	if calls != 2 {
		t.Errorf("%d unmounts, want 2", calls)
	}
	for _, f := range []string{data1, data2} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a volume's file was deleted: %v", err)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("left %v, %v", entries, err)
	}
}
