package testbed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// aptDependsOutput is "apt-cache depends" output of bookworm, trimmed:
// alternatives (" |Depends"), a virtual package with providers, a
// dependency of another kind and a virtual package asked for by name.
const aptDependsOutput = `bind9-dnsutils
 |Depends: bind9-host
  Depends: <host>
    bind9-host
  Depends: bind9-libs
  Depends: libc6
base-files
  PreDepends: <awk>
    gawk
    original-awk
    mawk
nginx-common
 |Depends: debconf
  Depends: <debconf-2.0>
    cdebconf
    debconf
  Depends: lsb-base
libc6
  Depends: libgcc-s1
  Breaks: <libc6-dev>
<awk>
`

func TestParseAptDepends(t *testing.T) {
	got, err := parseAptDepends([]byte(aptDependsOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]string{
		"bind9-dnsutils": {{"bind9-host", "bind9-host"}, {"bind9-libs"}, {"libc6"}},
		"base-files":     {{"gawk", "original-awk", "mawk"}},
		"nginx-common":   {{"debconf", "cdebconf", "debconf"}, {"lsb-base"}},
		"libc6":          {{"libgcc-s1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := parseAptDepends([]byte("x\n  nonsense\n")); err == nil {
		t.Errorf("a line without a kind was accepted")
	}
}

// fakeApt answers "apt-cache depends" from a table of packages and
// dependencies ("a|b" for alternatives, "<v>=p1,p2" for a virtual
// package and its providers).
func fakeApt(table map[string][]string) aptRunner {
	return func(_ context.Context, _, name string, args ...string) ([]byte, error) {
		if name != "apt-cache" || args[0] != "depends" {
			return nil, errors.New("unexpected " + name + " " + strings.Join(args, " "))
		}
		var b strings.Builder
		for _, pkg := range args {
			if strings.HasPrefix(pkg, "-") || pkg == "depends" {
				continue
			}
			b.WriteString(pkg + "\n")
			for _, dep := range table[pkg] {
				alts := strings.Split(dep, "|")
				for i, alt := range alts {
					prefix := "  "
					if i < len(alts)-1 {
						prefix = " |"
					}
					virtual, providers, isVirtual := strings.Cut(alt, "=")
					b.WriteString(prefix + "Depends: " + virtual + "\n")
					if isVirtual {
						for _, p := range strings.Split(providers, ",") {
							b.WriteString("    " + p + "\n")
						}
					}
				}
			}
		}
		return []byte(b.String()), nil
	}
}

func TestResolve(t *testing.T) {
	table := map[string][]string{
		"base-files":     {"<awk>=gawk,mawk"},
		"gawk":           {"libc6"},
		"mawk":           {"libc6"},
		"libc6":          {"libgcc-s1"},
		"nginx":          {"libc6", "nginx-common"},
		"nginx-common":   {"debconf|<debconf-2.0>=cdebconf,debconf", "lsb-base"},
		"bind9-dnsutils": {"bind9-host|<host>=bind9-host", "libc6"},
	}
	for _, tc := range []struct {
		roots, want []string
	}{
		// The first provider, unless another is taken already.
		{[]string{"base-files"}, []string{"base-files", "gawk", "libc6", "libgcc-s1"}},
		{[]string{"base-files", "mawk"}, []string{"base-files", "libc6", "libgcc-s1", "mawk"}},
		// debconf and lsb-base only serve installing.
		{[]string{"nginx"}, []string{"libc6", "libgcc-s1", "nginx", "nginx-common"}},
		{[]string{"bind9-dnsutils"}, []string{"bind9-dnsutils", "bind9-host", "libc6", "libgcc-s1"}},
	} {
		p := &DebianPool{Dir: t.TempDir(), run: fakeApt(table)}
		got, err := p.Resolve(context.Background(), tc.roots)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Resolve(%v) = %v, want %v", tc.roots, got, tc.want)
		}
	}
}

// TestTreeFiles checks that unpacked packages become image files with
// their kinds and modes, later trees winning and documentation left out.
func TestTreeFiles(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{"usr/bin", "usr/share/doc/x", "tmp"} {
		if err := os.MkdirAll(filepath.Join(a, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(a, "usr/bin/x"), "a's x", 0o755)
	writeFile(t, filepath.Join(a, "usr/share/doc/x/README"), "doc", 0o644)
	if err := os.Symlink("x", filepath.Join(a, "usr/bin/y")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(a, "tmp"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(b, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b, "usr/bin/x"), "b's x", 0o700)
	files, err := treeFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ImageFile{}
	for _, f := range files {
		got[f.Path] = f
	}
	if _, ok := got["/usr/share/doc"]; ok {
		t.Errorf("documentation kept: %v", got)
	}
	if x := got["/usr/bin/x"]; x.Source != filepath.Join(b, "usr/bin/x") || x.Mode.Perm() != 0o700 {
		t.Errorf("/usr/bin/x = %+v, want b's", x)
	}
	if y := got["/usr/bin/y"]; y.Kind != Symlink || y.Target != "x" {
		t.Errorf("/usr/bin/y = %+v, want a link to x", y)
	}
	if tmp := got["/tmp"]; tmp.Kind != Directory || tmp.Mode&os.ModeSticky == 0 {
		t.Errorf("/tmp = %+v, want a sticky folder", tmp)
	}
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
