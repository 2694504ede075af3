package tokenformat

import (
	"regexp"
	"strings"
	"testing"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// The library kubeadm used before is the oracle: every answer here must be
// the same as its answer.

func TestIsValid(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  bool
	}{
		{"abcdef.0123456789abcdef", true},
		{"000000.0000000000000000", true},
		{"", false},
		{".", false},
		{"abcdef.", false},
		{".0123456789abcdef", false},
		{"abcdef:0123456789abcdef", false},
		{"ABCDEF.0123456789abcdef", false},
		{"abcdef.0123456789ABCDEF", false},
		{"abcde.0123456789abcdefg", false},
		{"abcdefg.0123456789abcde", false},
		{"abcdef.0123456789abcdef\n", false},
		{"abcdef.0123456789abcde_", false},
		{"abcdéf.0123456789abcde", false},
	} {
		if got := IsValid(tc.token); got != tc.want {
			t.Errorf("IsValid(%q) = %v, want %v", tc.token, got, tc.want)
		}
		if oracle := bootstraputil.IsValidBootstrapToken(tc.token); oracle != tc.want {
			t.Errorf("the oracle says %v for %q; the table is wrong", oracle, tc.token)
		}
	}
}

func TestIsValidID(t *testing.T) {
	for _, id := range []string{"abcdef", "a1b2c3", "", "abcde", "abcdefg", "ABCDEF", "abc.ef", "abcde\n"} {
		if got, want := IsValidID(id), bootstraputil.IsValidBootstrapTokenID(id); got != want {
			t.Errorf("IsValidID(%q) = %v, the oracle says %v", id, got, want)
		}
	}
}

func TestValidateGroup(t *testing.T) {
	long := groupPrefix + strings.Repeat("a", 256)
	for _, g := range []string{
		"system:bootstrappers:kubeadm:default-node-token",
		"system:bootstrappers:a",
		"system:bootstrappers:9",
		"system:bootstrappers:",
		"system:bootstrappers:-",
		"system:bootstrappers:a-",
		"system:bootstrappers:a:",
		"system:bootstrappers:-a",
		"system:bootstrappers::a",
		"system:bootstrappers:A",
		"system:bootstrappers:a_b",
		"system:bootstrappers",
		"system:nodes",
		"",
		long,
		long + "a",
		"xsystem:bootstrappers:a",
		"system:bootstrappers:a\n",
	} {
		got, want := ValidateGroup(g), bootstraputil.ValidateBootstrapGroupName(g)
		if (got == nil) != (want == nil) {
			t.Errorf("ValidateGroup(%q) = %v, the oracle says %v", g, got, want)
			continue
		}
		if got != nil && got.Error() != want.Error() {
			t.Errorf("ValidateGroup(%q) message\n got %s\nwant %s", g, got, want)
		}
	}
}

func TestValidateUsages(t *testing.T) {
	for _, usages := range [][]string{
		nil,
		{},
		{"signing"},
		{"signing", "authentication"},
		{"authentication", "authentication"},
		{"foo"},
		{"signing", "foo", "bar", "foo"},
		{""},
		{"Signing"},
	} {
		got, want := ValidateUsages(usages), bootstraputil.ValidateUsages(usages)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("ValidateUsages(%q) = %v, the oracle says %v", usages, got, want)
		}
	}
}

func TestJoin(t *testing.T) {
	if got, want := Join("abcdef", "0123456789abcdef"), bootstraputil.TokenFromIDAndSecret("abcdef", "0123456789abcdef"); got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}

func TestGenerate(t *testing.T) {
	shape := regexp.MustCompile(`\A[a-z0-9]{6}\.[a-z0-9]{16}\z`)
	seen := map[byte]int{}
	tokens := map[string]bool{}
	const n = 2000
	for range n {
		tok, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !shape.MatchString(tok) || !IsValid(tok) {
			t.Fatalf("Generate() = %q, not a token", tok)
		}
		if tokens[tok] {
			t.Fatalf("Generate() returned %q twice", tok)
		}
		tokens[tok] = true
		for i := 0; i < len(tok); i++ {
			seen[tok[i]]++
		}
	}
	// 44,000 characters over 36 letters and digits: each should appear
	// about 1,222 times. A bias as small as modulo reduction's would still
	// pass this loose check; it is there to catch a broken alphabet.
	for i := 0; i < len(alphabet); i++ {
		if c := seen[alphabet[i]]; c < 900 || c > 1600 {
			t.Errorf("character %q drawn %d times out of %d", alphabet[i], c, n*22)
		}
	}
}

func FuzzSameAsOracle(f *testing.F) {
	for _, s := range []string{"abcdef.0123456789abcdef", "abcdef", "system:bootstrappers:a-b:c", "signing"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsValid(s), bootstraputil.IsValidBootstrapToken(s); got != want {
			t.Errorf("IsValid(%q) = %v, oracle %v", s, got, want)
		}
		if got, want := IsValidID(s), bootstraputil.IsValidBootstrapTokenID(s); got != want {
			t.Errorf("IsValidID(%q) = %v, oracle %v", s, got, want)
		}
		if got, want := ValidateGroup(s) == nil, bootstraputil.ValidateBootstrapGroupName(s) == nil; got != want {
			t.Errorf("ValidateGroup(%q) ok = %v, oracle %v", s, got, want)
		}
		if got, want := ValidateGroup(groupPrefix+s) == nil, bootstraputil.ValidateBootstrapGroupName(groupPrefix+s) == nil; got != want {
			t.Errorf("ValidateGroup(prefix+%q) ok = %v, oracle %v", s, got, want)
		}
	})
}
