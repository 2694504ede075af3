package kubeadmbinary

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
)

// Path is where the kubeadm program that static Pods run is copied.
const Path = "/var/lib/kubeadm/kubeadm"

// Mode is the copy's file mode.
const Mode fs.FileMode = 0o755

// SHA256 returns the hexadecimal SHA-256 of the file at path.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Install copies the program src, whose SHA-256 is sum, to dst (mode
// Mode, its folder made when missing), unless dst holds that content
// already. The copy is checked against sum, so a src that changed since
// sum was taken is an error and dst is left as it was. Idempotent.
func Install(src, dst, sum string) error {
	switch have, err := SHA256(dst); {
	case err == nil && have == sum:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("checking %s: %w", dst, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", dst, err)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	h := sha256.New()
	err = atomicfile.WriteWith(dst, Mode, func(f *os.File) error {
		if _, err := io.Copy(io.MultiWriter(f, h), in); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != sum {
			return fmt.Errorf("%s changed while it was copied", src)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return nil
}
