package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
	"sigs.k8s.io/yaml/kyaml"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// APIVersion is the API version of kubeadm's output documents.
const APIVersion = "output.kubeadm.k8s.io/v1alpha3"

// Formats are the -o values New accepts, for help texts; the template and
// JSONPath ones take "=" and their argument.
const Formats = "json|yaml|kyaml|go-template|go-template-file|template|templatefile|jsonpath|jsonpath-as-json|jsonpath-file"

// ErrUnknownFormat is returned, wrapped, by New for a format it does not
// know.
var ErrUnknownFormat = errors.New("unknown output format")

// Printer prints documents in one format.
type Printer struct {
	format string // json, yaml or kyaml; "" for a template or an expression
	tmpl   *template.Template
	path   *jsonpath.JSONPath
	// printed counts the documents printed so far.
	printed int
}

// New returns the printer of format: "json", "yaml", "kyaml",
// "go-template=TEMPLATE" (or "template=TEMPLATE"), "go-template-file=PATH"
// (or "templatefile=PATH"), "jsonpath=EXPRESSION",
// "jsonpath-as-json=EXPRESSION" or "jsonpath-file=PATH". Files are read,
// and templates and expressions parsed, here. allowMissingKeys lets a
// template or expression name keys a document lacks, as kubectl's
// --allow-missing-template-keys does. A format not in that list is an
// error wrapping ErrUnknownFormat.
func New(format string, allowMissingKeys bool) (*Printer, error) {
	name, arg, hasArg := strings.Cut(format, "=")
	switch name {
	case "json", "yaml", "kyaml":
		if hasArg {
			break
		}
		return &Printer{format: name}, nil
	case "go-template", "template", "go-template-file", "templatefile":
		text, err := argument(name, arg, hasArg, strings.HasSuffix(name, "file"))
		if err != nil {
			return nil, err
		}
		t, err := template.New("output").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("parsing the template %q: %w", text, err)
		}
		if !allowMissingKeys {
			t = t.Option("missingkey=error")
		}
		return &Printer{tmpl: t}, nil
	case "jsonpath", "jsonpath-as-json", "jsonpath-file":
		text, err := argument(name, arg, hasArg, name == "jsonpath-file")
		if err != nil {
			return nil, err
		}
		p := jsonpath.New("output").AllowMissingKeys(allowMissingKeys)
		if err := p.Parse(text); err != nil {
			return nil, fmt.Errorf("parsing the JSONPath expression %q: %w", text, err)
		}
		p.EnableJSONOutput(name == "jsonpath-as-json")
		return &Printer{path: p}, nil
	}
	// Every command that prints these documents also has its own "text".
	return nil, fmt.Errorf("%w %q; use text or one of %s", ErrUnknownFormat, format, Formats)
}

// argument is the template or expression of format name: arg itself, or
// the content of the file arg names.
func argument(name, arg string, hasArg, isFile bool) (string, error) {
	if !hasArg || arg == "" {
		what := "a template"
		switch {
		case isFile:
			what = "a file"
		case strings.HasPrefix(name, "jsonpath"):
			what = "an expression"
		}
		//lint:ignore ST1005 the dots stand for the argument the user must add
		return "", fmt.Errorf("the output format %s needs %s: -o %s=...", name, what, name)
	}
	if !isFile {
		return arg, nil
	}
	b, err := boundedread.ReadFile(arg, boundedread.MaxFile)
	if err != nil {
		return "", fmt.Errorf("reading the %s file: %w", name, err)
	}
	return string(b), nil
}

// Print writes doc, a document of the output API (a struct with its kind
// and apiVersion), to w.
func (p *Printer) Print(w io.Writer, doc any) error {
	defer func() { p.printed++ }()
	switch p.format {
	case "json":
		b, err := json.MarshalIndent(doc, "", "    ")
		if err != nil {
			return fmt.Errorf("encoding the output as JSON: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "yaml":
		b, err := yaml.Marshal(doc)
		if err != nil {
			return fmt.Errorf("encoding the output as YAML: %w", err)
		}
		if p.printed > 0 {
			b = append([]byte("---\n"), b...)
		}
		_, err = w.Write(b)
		return err
	case "kyaml":
		var buf bytes.Buffer
		if err := (&kyaml.Encoder{}).FromObject(doc, &buf); err != nil {
			return fmt.Errorf("encoding the output as KYAML: %w", err)
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	// Templates and expressions see the document as JSON values.
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decoding the output: %w", err)
	}
	if p.tmpl != nil {
		if err := p.tmpl.Execute(w, v); err != nil {
			return fmt.Errorf("executing the template: %w", err)
		}
		return nil
	}
	if err := p.path.Execute(w, v); err != nil {
		return fmt.Errorf("executing the JSONPath expression: %w", err)
	}
	return nil
}
