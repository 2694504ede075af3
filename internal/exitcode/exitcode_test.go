package exitcode

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		err  error
		want int
	}{
		{nil, OK},
		{base, Generic},
		{ValidationError(base), Validation},
		{fmt.Errorf("wrapped: %w", ValidationError(base)), Validation},
		{PreflightError(base), Preflight},
		{fmt.Errorf("phase x: %w", PreflightError(base)), Preflight},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if ValidationError(nil) != nil || PreflightError(nil) != nil {
		t.Error("wrapping nil must stay nil")
	}
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Print(&b, errors.New("bad thing\n"))
	if b.String() != "error: bad thing\n" {
		t.Errorf("got %q", b.String())
	}
}
