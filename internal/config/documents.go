package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Document is one YAML document of a configuration file, converted to JSON.
type Document struct {
	GVK schema.GroupVersionKind
	// JSON is the document converted to JSON (the last value wins for a
	// duplicated key, as in upstream's lenient decoding).
	JSON []byte
	// Index is the document's position in the file, from 0.
	Index int
	// Duplicates lists problems with keys given twice, found when
	// converting the YAML strictly.
	Duplicates []string
}

// SplitDocuments splits a YAML stream into documents. Empty documents are
// dropped. A document that is not YAML, or lacks apiVersion or kind, is an
// error naming its position.
func SplitDocuments(data []byte) ([]Document, error) {
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	var docs []Document
	for i := 0; ; i++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", i+1, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "---" {
			continue
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d is not valid YAML: %w", len(docs)+1, err)
		}
		if string(js) == "null" {
			return nil, fmt.Errorf("document %d has no content: every document needs an apiVersion and a kind", len(docs)+1)
		}
		if len(js) == 0 || js[0] != '{' {
			return nil, fmt.Errorf("document %d is not a YAML mapping of fields (got %s)", len(docs)+1, describeJSON(js))
		}
		var tm metav1.TypeMeta
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
			return nil, fmt.Errorf("document %d: reading apiVersion and kind: %w", len(docs)+1, err)
		}
		if tm.APIVersion == "" {
			return nil, fmt.Errorf("document %d has no apiVersion", len(docs)+1)
		}
		if tm.Kind == "" {
			return nil, fmt.Errorf("document %d (apiVersion %s) has no kind", len(docs)+1, tm.APIVersion)
		}
		gv, err := schema.ParseGroupVersion(tm.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("document %d: apiVersion %q is malformed: %w", len(docs)+1, tm.APIVersion, err)
		}
		doc := Document{GVK: gv.WithKind(tm.Kind), JSON: js, Index: len(docs)}
		if _, err := yaml.YAMLToJSONStrict(raw); err != nil {
			doc.Duplicates = append(doc.Duplicates, duplicateMessage(err))
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

// Strict decodes doc into obj and returns, separately from a hard decoding
// error, the strictness problems: unknown and duplicated fields, each naming
// the field path.
func (d Document) Strict(obj any) (problems []string, err error) {
	strictErrs, err := sigsjson.UnmarshalStrict(d.JSON, obj)
	if err != nil {
		return nil, err
	}
	for _, e := range strictErrs {
		problems = append(problems, e.Error())
	}
	problems = append(problems, d.Duplicates...)
	return problems, nil
}

func duplicateMessage(err error) string {
	msg := err.Error()
	// The YAML library reports duplicates as: yaml: unmarshal errors:\n  line N: key "x" already set in map
	if i := strings.Index(msg, "line "); i >= 0 {
		msg = strings.TrimSpace(msg[i:])
	}
	return "duplicate field: " + msg
}

func describeJSON(js []byte) string {
	s := strings.TrimSpace(string(js))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
