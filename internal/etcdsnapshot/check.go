package etcdsnapshot

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
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
	f, size, err := openSnapshot(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := check(f, size)
	if err != nil {
		return nil, err
	}
	info.Path = path
	return info, nil
}

// openSnapshot opens the snapshot file at path and checks that it is a
// regular file of a snapshot's shape (see checkSize); it returns the file
// and its size.
func openSnapshot(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil {
		err = checkSize(fi.Size())
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// checkSize checks that size bytes can be a snapshot: a database of whole
// sectors and a digest.
func checkSize(size int64) error {
	if size < sha256.Size+sectorSize || size%sectorSize != sha256.Size {
		return fmt.Errorf("%d bytes is not the size of an etcd snapshot (a database of whole %d-byte sectors followed by a %d-byte SHA-256 digest); was it copied from a data folder instead?",
			size, sectorSize, sha256.Size)
	}
	return nil
}

// check checks the first size bytes of f as a snapshot (of a size
// checkSize accepts): the digest at their end must be the SHA-256 of what
// comes before, and etcd's snapshot status (what `etcdutl snapshot
// status` runs) must find the database sound: bbolt's consistency check
// passes and every key decodes. The Info has the size and revision.
func check(f *os.File, size int64) (*Info, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-sha256.Size)); err != nil {
		return nil, fmt.Errorf("reading the snapshot: %w", err)
	}
	want := make([]byte, sha256.Size)
	if _, err := f.ReadAt(want, size-sha256.Size); err != nil {
		return nil, fmt.Errorf("reading the snapshot's digest: %w", err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return nil, damaged(got, want)
	}
	var st snapshot.Status
	logs := &etcdLog{}
	if err := logs.recovered(func() (err error) {
		st, err = snapshot.NewV3(logs.logger()).Status(f.Name())
		return err
	}); err != nil {
		return nil, fmt.Errorf("reading the database in the snapshot: %w", err)
	}
	return &Info{Size: size, Revision: st.Revision}, nil
}

// damaged is the error of a snapshot whose database's SHA-256 is got while
// its digest says want.
func damaged(got, want []byte) error {
	return fmt.Errorf("the snapshot is damaged: its SHA-256 is %x, its last %d bytes say %x", got, sha256.Size, want)
}
