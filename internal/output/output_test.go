package output

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doc struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion"`
	Images     []string `json:"images"`
}

func docs() []doc {
	return []doc{
		{Kind: "Images", APIVersion: APIVersion, Images: []string{"a:1", "b:2"}},
		{Kind: "Images", APIVersion: APIVersion, Images: []string{"c:3"}},
	}
}

func print(t *testing.T, format string, allowMissingKeys bool) (string, error) {
	t.Helper()
	p, err := New(format, allowMissingKeys)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, d := range docs() {
		if err := p.Print(&b, d); err != nil {
			return b.String(), err
		}
	}
	return b.String(), nil
}

// TestFormats: each format prints two documents as kubectl's printer of
// that name does (the expectations follow upstream kubeadm's output).
func TestFormats(t *testing.T) {
	dir := t.TempDir()
	tmplFile := filepath.Join(dir, "t.tmpl")
	pathFile := filepath.Join(dir, "p.txt")
	os.WriteFile(tmplFile, []byte("{{.kind}};"), 0o600)
	os.WriteFile(pathFile, []byte("{.images[0]} "), 0o600)
	for _, tc := range []struct{ format, want string }{
		{"json", "{\n    \"kind\": \"Images\",\n    \"apiVersion\": \"output.kubeadm.k8s.io/v1alpha3\",\n    \"images\": [\n        \"a:1\",\n        \"b:2\"\n    ]\n}\n" +
			"{\n    \"kind\": \"Images\",\n    \"apiVersion\": \"output.kubeadm.k8s.io/v1alpha3\",\n    \"images\": [\n        \"c:3\"\n    ]\n}\n"},
		{"yaml", "apiVersion: output.kubeadm.k8s.io/v1alpha3\nimages:\n- a:1\n- b:2\nkind: Images\n---\napiVersion: output.kubeadm.k8s.io/v1alpha3\nimages:\n- c:3\nkind: Images\n"},
		{"kyaml", "---\n{\n  kind: \"Images\",\n  apiVersion: \"output.kubeadm.k8s.io/v1alpha3\",\n  images: [\n    \"a:1\",\n    \"b:2\",\n  ],\n}\n" +
			"---\n{\n  kind: \"Images\",\n  apiVersion: \"output.kubeadm.k8s.io/v1alpha3\",\n  images: [\n    \"c:3\",\n  ],\n}\n"},
		{"go-template={{range .images}}{{.}} {{end}}", "a:1 b:2 c:3 "},
		{"template={{.kind}}", "ImagesImages"},
		{"go-template-file=" + tmplFile, "Images;Images;"},
		{"templatefile=" + tmplFile, "Images;Images;"},
		{"jsonpath={.images[*]}", "a:1 b:2c:3"},
		{"jsonpath-file=" + pathFile, "a:1 c:3 "},
		{"jsonpath-as-json={.images[0]}", "[\n    \"a:1\"\n]\n[\n    \"c:3\"\n]\n"},
	} {
		got, err := print(t, tc.format, true)
		if err != nil || got != tc.want {
			t.Errorf("-o %s: %v\n%q\nwant\n%q", tc.format, err, got, tc.want)
		}
	}
}

func TestMissingKeys(t *testing.T) {
	if got, err := print(t, "jsonpath={.nothing}", true); err != nil || got != "" {
		t.Errorf("allowed missing key: %q, %v", got, err)
	}
	if _, err := print(t, "jsonpath={.nothing}", false); err == nil {
		t.Error("a missing key passed without --allow-missing-template-keys")
	}
	if _, err := print(t, "go-template={{.nothing.deeper}}", false); err == nil {
		t.Error("a missing template key passed without --allow-missing-template-keys")
	}
}

func TestBadFormats(t *testing.T) {
	for format, want := range map[string]string{
		"text":                    "unknown output format",
		"wide":                    "unknown output format",
		"json=x":                  "unknown output format",
		"jsonpath":                "needs an expression",
		"go-template=":            "needs a template",
		"jsonpath-file=/nonexist": "reading the jsonpath-file file",
		"go-template={{.kind":     "parsing the template",
		"jsonpath={.images[":      "parsing the JSONPath expression",
		"templatefile":            "needs a file",
	} {
		_, err := New(format, true)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-o %s: %v, want an error containing %q", format, err, want)
		}
		if strings.HasPrefix(want, "unknown") != errors.Is(err, ErrUnknownFormat) {
			t.Errorf("-o %s: ErrUnknownFormat wrapped: %v", format, errors.Is(err, ErrUnknownFormat))
		}
	}
}
