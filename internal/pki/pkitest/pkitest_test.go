package pkitest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"ca.crt": "a", "etcd/ca.key": "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := Files(t, dir), map[string]string{"ca.crt": "a", "etcd/ca.key": "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Files = %v, want %v", got, want)
	}
	if got := Files(t, filepath.Join(dir, "none")); len(got) != 0 {
		t.Errorf("a missing folder holds %v", got)
	}
}
