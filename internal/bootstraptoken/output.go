package bootstraptoken

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/output"
)

// The type "token list -o json|yaml" prints each token as.
const (
	OutputAPIVersion = output.APIVersion
	OutputKind       = "BootstrapToken"
)

// Output is one token as "token list" prints it in JSON or YAML.
type Output struct {
	metav1.TypeMeta        `json:",inline"`
	kubeadm.BootstrapToken `json:",inline"`
}

// NewOutput wraps tok with the output kind and API version.
func NewOutput(tok kubeadm.BootstrapToken) Output {
	return Output{TypeMeta: metav1.TypeMeta{APIVersion: OutputAPIVersion, Kind: OutputKind}, BootstrapToken: tok}
}

// OutputFormats are the values Print accepts, for help texts (the
// template and JSONPath ones with "=" and their argument).
const OutputFormats = "text|" + output.Formats

// Column widths of the text table, as upstream pads them. A longer value
// pushes the rest of its row right; the expiration is not padded in rows.
const textRow = "%-23s   %-9s   %s   %-22s   %-56s   %s\n"

// Print writes tokens to w in format: "text" (upstream's table, nothing
// when there are no tokens; "" too) or one of the machine-readable formats
// of package output, one document per token. A template that names a
// missing key fails unless allowMissingKeys. now is the clock the TTL
// column counts from.
func Print(w io.Writer, format string, tokens []kubeadm.BootstrapToken, now time.Time, allowMissingKeys bool) error {
	if format == "" || format == "text" {
		return printText(w, tokens, now)
	}
	p, err := output.New(format, allowMissingKeys)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		if err := p.Print(w, NewOutput(t)); err != nil {
			return fmt.Errorf("printing bootstrap token %s: %w", t.Token.ID, err)
		}
	}
	return nil
}

// CheckOutputFormat reports whether Print accepts format, parsing its
// template if it has one.
func CheckOutputFormat(format string, allowMissingKeys bool) error {
	return Print(io.Discard, format, nil, time.Time{}, allowMissingKeys)
}

// printText writes upstream's table: a header and one row per token, or
// nothing at all when there is no token.
func printText(w io.Writer, tokens []kubeadm.BootstrapToken, now time.Time) error {
	if len(tokens) == 0 {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-23s   %-9s   %-20s   %-22s   %-56s   %s\n", "TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS")
	for _, t := range tokens {
		ttl, expires := "<forever>", "<never>"
		if t.Expires != nil {
			ttl = duration.ShortHumanDuration(t.Expires.Sub(now))
			expires = t.Expires.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, textRow, t.Token.String(), ttl, expires, orNone(t.Usages), orNoneString(t.Description), orNone(t.Groups))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func orNone(list []string) string { return orNoneString(strings.Join(list, ",")) }

func orNoneString(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
