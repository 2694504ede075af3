package kubeadmbinary

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstall: the copy gets the program's content and mode; a second
// install of the same program leaves the copy alone; a program whose
// content is not the sum it was taken with is refused and the copy kept.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "kubeadm"), filepath.Join(dir, "var", "lib", "kubeadm", "kubeadm")
	if err := os.WriteFile(src, []byte("program v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	sum, err := SHA256(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := Install(src, dst, sum); err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(dst)
	if err != nil || first.Mode().Perm() != Mode {
		t.Fatalf("the copy: %v, %v; want mode %v", first, err, Mode)
	}
	if got, _ := SHA256(dst); got != sum {
		t.Errorf("the copy's SHA-256 %s, want %s", got, sum)
	}
	if err := Install(src, dst, sum); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(dst); !os.SameFile(first, again) {
		t.Error("the same program was copied again")
	}

	if err := os.WriteFile(src, []byte("program v2, changed"), 0o700); err != nil {
		t.Fatal(err)
	}
	err = Install(src, dst, "0123")
	if err == nil || !strings.Contains(err.Error(), "changed while it was copied") {
		t.Fatalf("Install of a changed program = %v, want a refusal", err)
	}
	if got, _ := SHA256(dst); got != sum {
		t.Error("the refused copy replaced the installed one")
	}
}
