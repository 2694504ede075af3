package startmem

// regionSize is the size of the heap region given huge pages.
const regionSize = 32 << 20

func init() {
	prefaultData()
	hugeHeapRegion(regionSize)
}

// writableSegment finds, in the text of /proc/self/maps, the private
// writable mapping of the executable (the file named by the first line):
// its start and length, or ok false. It parses by hand: strconv and bytes
// would make this package's init wait for theirs.
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
		s, ok1 := parseHex(lo)
		e, ok2 := parseHex(hi)
		if !ok1 || !ok2 || e <= s {
			return 0, 0, false
		}
		return s, e - s, true
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

// parseHex reads a non-empty hexadecimal number of at most 16 digits.
func parseHex(s string) (uintptr, bool) {
	if s == "" || len(s) > 16 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return uintptr(n), true
}
