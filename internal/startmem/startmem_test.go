package startmem

import (
	"os"
	"runtime"
	"testing"
)

func TestWritableSegment(t *testing.T) {
	maps := []byte(`00400000-01cb9000 r-xp 00000000 fe:00 1234                       /usr/bin/kubeadm
01cba000-038ff000 r--p 018ba000 fe:00 1234                       /usr/bin/kubeadm
038ff000-0399f000 rw-p 034ff000 fe:00 1234                       /usr/bin/kubeadm
0399f000-059ed000 rw-p 00000000 00:00 0
7f0000000000-7f0000040000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
`)
	start, length, ok := writableSegment(maps)
	if !ok || start != 0x38ff000 || length != 0xa0000 {
		t.Fatalf("writableSegment = %#x, %#x, %v; want 0x38ff000, 0xa0000, true", start, length, ok)
	}
	for name, bad := range map[string]string{
		"empty":            "",
		"no writable file": "00400000-01cb9000 r-xp 00000000 fe:00 1234 /bin/x\n0399f000-059ed000 rw-p 00000000 00:00 0\n",
		"bad range":        "00400000-01cb9000 r-xp 00000000 fe:00 1234 /bin/x\nzz-01 rw-p 00000000 fe:00 1234 /bin/x\n",
		"not hex":          "00400000-01cb9000 r-xp 00000000 fe:00 1234 /bin/x\n0200000g-02001000 rw-p 00000000 fe:00 1234 /bin/x\n",
		"no dash":          "00400000-01cb9000 r-xp 00000000 fe:00 1234 /bin/x\n02000000 rw-p 00000000 fe:00 1234 /bin/x\n",
		"empty range":      "00400000-01cb9000 r-xp 00000000 fe:00 1234 /bin/x\n02000000-02000000 rw-p 00000000 fe:00 1234 /bin/x\n",
	} {
		if _, _, ok := writableSegment([]byte(bad)); ok {
			t.Errorf("%s: writableSegment found a segment", name)
		}
	}
}

// TestOwnBinary runs the real steps on the test binary: its data segment
// must be found, and neither step may fail.
func TestOwnBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/self/maps")
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if _, length, ok := writableSegment(maps); !ok || length == 0 {
		t.Fatalf("writableSegment found no data segment in /proc/self/maps:\n%s", maps)
	}
	prefaultData()
	hugeHeapRegion(4<<20, 2<<20)
}
