// Package pkitest holds test helpers for code that writes a node's
// certificates, keys and kubeconfig files. Only tests import it.
package pkitest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Files maps every file under dir, by its path relative to dir, to its
// content, so that a test can tell what a step wrote, changed or left
// alone. A missing dir holds no file; any other error fails the test.
func Files(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if e.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the files under %s: %v", dir, err)
	}
	return files
}
