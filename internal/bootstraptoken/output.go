package bootstraptoken

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// The type "token list -o json|yaml" prints each token as.
const (
	OutputAPIVersion = "output.kubeadm.k8s.io/v1alpha3"
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

// OutputFormats are the values Print accepts (templates as
// "go-template=TEMPLATE" and "jsonpath=EXPRESSION").
const OutputFormats = "text|json|yaml|go-template=...|jsonpath=..."

// Column widths of the text table, as upstream pads them. A longer value
// pushes the rest of its row right; the expiration is not padded in rows.
const textRow = "%-23s   %-9s   %s   %-22s   %-56s   %s\n"

// Print writes tokens to w in format: "text" (upstream's table, nothing
// when there are no tokens; "" too),
// "json" (one indented object per token), "yaml" (documents separated by
// "---"), "go-template=..." or "jsonpath=...". A template that names a
// missing key fails unless allowMissingKeys. now is the clock the TTL
// column counts from.
func Print(w io.Writer, format string, tokens []kubeadm.BootstrapToken, now time.Time, allowMissingKeys bool) error {
	name, arg, _ := strings.Cut(format, "=")
	switch name {
	case "", "text":
		return printText(w, tokens, now)
	case "json":
		for _, t := range tokens {
			b, err := json.MarshalIndent(NewOutput(t), "", "    ")
			if err != nil {
				return fmt.Errorf("encoding bootstrap token %s as JSON: %w", t.Token.ID, err)
			}
			if _, err := w.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		return nil
	case "yaml":
		for i, t := range tokens {
			b, err := yaml.Marshal(NewOutput(t))
			if err != nil {
				return fmt.Errorf("encoding bootstrap token %s as YAML: %w", t.Token.ID, err)
			}
			if i > 0 {
				b = append([]byte("---\n"), b...)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
		return nil
	case "go-template", "template":
		return printGoTemplate(w, arg, tokens, allowMissingKeys)
	case "jsonpath":
		return printJSONPath(w, arg, tokens, allowMissingKeys)
	}
	return fmt.Errorf("the output format %q is not supported; use one of %s", format, OutputFormats)
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

// asMaps turns tokens into the generic JSON values templates walk.
func asMaps(tokens []kubeadm.BootstrapToken) ([]any, error) {
	out := make([]any, 0, len(tokens))
	for _, t := range tokens {
		b, err := json.Marshal(NewOutput(t))
		if err != nil {
			return nil, fmt.Errorf("encoding bootstrap token %s: %w", t.Token.ID, err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("decoding bootstrap token %s: %w", t.Token.ID, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func printGoTemplate(w io.Writer, text string, tokens []kubeadm.BootstrapToken, allowMissingKeys bool) error {
	tmpl, err := template.New("output").Parse(text)
	if err != nil {
		return fmt.Errorf("parsing the go-template %q: %w", text, err)
	}
	if !allowMissingKeys {
		tmpl = tmpl.Option("missingkey=error")
	}
	values, err := asMaps(tokens)
	if err != nil {
		return err
	}
	for _, v := range values {
		if err := tmpl.Execute(w, v); err != nil {
			return fmt.Errorf("executing the go-template %q: %w", text, err)
		}
	}
	return nil
}

func printJSONPath(w io.Writer, expr string, tokens []kubeadm.BootstrapToken, allowMissingKeys bool) error {
	jp := jsonpath.New("output").AllowMissingKeys(allowMissingKeys)
	if err := jp.Parse(expr); err != nil {
		return fmt.Errorf("parsing the jsonpath expression %q: %w", expr, err)
	}
	values, err := asMaps(tokens)
	if err != nil {
		return err
	}
	for _, v := range values {
		if err := jp.Execute(w, v); err != nil {
			return fmt.Errorf("executing the jsonpath expression %q: %w", expr, err)
		}
	}
	return nil
}
