package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDisk(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(a, make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{StateDir: filepath.Join(dir, "state"), Archives: []string{a}}
	need, err := c.diskNeed(3)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(3 * (1800 + nodeOverhead)); need != want {
		t.Errorf("diskNeed(3) = %d, want %d", need, want)
	}
	if err := c.checkDisk(1); err != nil {
		t.Errorf("one small node: %v", err)
	}
	if err := c.checkDisk(1 << 20); err == nil || !strings.Contains(err.Error(), "is free") {
		t.Errorf("a million nodes: %v, want an error naming the free space", err)
	}
	c.Archives = []string{filepath.Join(dir, "missing.tar")}
	if err := c.checkDisk(1); err == nil {
		t.Error("a missing archive is not reported")
	}
}
