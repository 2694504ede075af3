package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
)

// sectorSize is the unit etcd's database file grows by, at the least: a
// snapshot is a whole number of them plus the digest.
const sectorSize = 512

// Check reads the snapshot file at path, checks its trailing digest and
// that etcd can read the database in it, and returns its path, size and
// revision.
func Check(path string) (*Info, error) {
	info, err := checkFile(path)
	if err != nil {
		return nil, fmt.Errorf("etcd snapshot %s: %w", path, err)
	}
	return info, nil
}

// checkFile is Check without naming the file in its errors.
func checkFile(path string) (*Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	info, err := check(f, fi.Size())
	if err != nil {
		return nil, err
	}
	info.Path = path
	return info, nil
}

// check checks the first size bytes of f as a snapshot: the digest at
// their end must be the SHA-256 of what comes before, and the database must
// open. The Info has the size and revision.
func check(f *os.File, size int64) (*Info, error) {
	if size < sha256.Size+sectorSize || size%sectorSize != sha256.Size {
		return nil, fmt.Errorf("%d bytes is not the size of an etcd snapshot (a database of whole %d-byte sectors followed by a %d-byte SHA-256 digest); was it copied from a data folder instead?",
			size, sectorSize, sha256.Size)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-sha256.Size)); err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	want := make([]byte, sha256.Size)
	if _, err := f.ReadAt(want, size-sha256.Size); err != nil {
		return nil, fmt.Errorf("reading the snapshot's digest: %w", err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return nil, fmt.Errorf("the snapshot is damaged: its SHA-256 is %x, its last %d bytes say %x", got, sha256.Size, want)
	}
	var rev int64
	if err := recovered(func() (err error) {
		rev, err = readRevision(f.Name())
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading the database in the snapshot: %w", err)
	}
	return &Info{Size: size, Revision: rev}, nil
}
