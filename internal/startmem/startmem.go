package startmem

import "strconv"

// The heap region mapped at start-up, and how much of it, from its start,
// is given huge pages: about what a command's heap reaches, so that the
// allocations of start-up and of a phase fault in 2 MiB at a time, while a
// process whose heap grows further does so in 4 KiB pages as before and
// does not hold memory it never uses.
const (
	regionSize = 32 << 20
	hugeSize   = 8 << 20
)

func init() {
	prefaultData()
	hugeHeapRegion(regionSize, hugeSize)
}

// writableSegment finds, in the text of /proc/self/maps, the private
// writable mapping of the executable (the file named by the first line):
// its start and length, or ok false. It splits lines and fields by hand:
// bytes and strings depend on unicode, whose tables are initialised only
// after ~14 ms, and this package's init would wait for them.
func writableSegment(maps []byte) (start, length uintptr, ok bool) {
	var exe string
	for len(maps) > 0 {
		line := maps
		if i := indexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		f := fields(line)
		if len(f) < 6 {
			continue
		}
		if exe == "" {
			exe = f[5]
		}
		if f[5] != exe || f[1] != "rw-p" {
			continue
		}
		lo, hi, found := cut(f[0], '-')
		if !found {
			return 0, 0, false
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return 0, 0, false
		}
		return uintptr(s), uintptr(e - s), true
	}
	return 0, 0, false
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// fields splits a line at runs of spaces and tabs.
func fields(line []byte) []string {
	var f []string
	start := -1
	for i, c := range line {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				f = append(f, string(line[start:i]))
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		f = append(f, string(line[start:]))
	}
	return f
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
