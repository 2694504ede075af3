package bootstraptoken

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"k8s.io/client-go/kubernetes/fake"
)

// testdata/list-secrets.yaml holds token Secrets as the API server returned
// them; testdata/list.golden.* is what upstream kubeadm v1.36.3's
// "token list" printed for them at testNow (-o text, json and yaml).

func listGoldenTokens(t *testing.T) *fake.Clientset {
	t.Helper()
	data, err := os.ReadFile("testdata/list-secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, &corev1.SecretList{})
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientset(obj.(*corev1.SecretList))
}

func TestPrintMatchesUpstream(t *testing.T) {
	tokens, skipped, err := List(context.Background(), listGoldenTokens(t))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("List: %v, skipped %v", err, skipped)
	}
	for format, golden := range map[string]string{"text": "list.golden.txt", "": "list.golden.txt", "json": "list.golden.json", "yaml": "list.golden.yaml"} {
		t.Run(format, func(t *testing.T) {
			want, err := os.ReadFile("testdata/" + golden)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Print(&b, format, tokens, testNow, true); err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("got\n%s\nwant\n%s", b.String(), want)
			}
		})
	}
}

func TestPrintTemplates(t *testing.T) {
	tokens, _, err := List(context.Background(), listGoldenTokens(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format, want string
		missingOK    bool
		wantErr      string
	}{
		{format: `jsonpath={.token}{"\n"}`, missingOK: true, want: "goldaa.0123456789abcdef\ngoldbb.abcdefghijklmnop\ngoldcc.0123456789abcdef\ngolddd.0123456789abcdef\ngoldee.0123456789abcdef\n"},
		{format: `go-template={{.token}} {{.description}}|`, missingOK: true, want: "goldaa.0123456789abcdef first one|goldbb.abcdefghijklmnop <no value>|goldcc.0123456789abcdef <no value>|golddd.0123456789abcdef a very long description that goes on and on and on beyond fifty six characters|goldee.0123456789abcdef <no value>|"},
		{format: `go-template={{.description}}`, missingOK: false, wantErr: "map has no entry"},
		{format: `jsonpath={.nothing}`, missingOK: false, wantErr: "nothing is not found"},
		{format: "wide", wantErr: `unknown output format "wide"`},
		{format: "go-template={{", wantErr: "parsing the template"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		err := Print(&b, tt.format, tokens, testNow, tt.missingOK)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.format, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.format, err)
		case tt.wantErr == "" && b.String() != tt.want:
			t.Errorf("%s:\n got %q\nwant %q", tt.format, b.String(), tt.want)
		}
	}
	for _, format := range []string{"text", "json", "yaml"} {
		var b bytes.Buffer
		if err := Print(&b, format, nil, testNow, true); err != nil || b.Len() != 0 {
			t.Errorf("%s without tokens: %q, %v; upstream prints nothing", format, b.String(), err)
		}
	}
	if err := CheckOutputFormat("yaml", true); err != nil {
		t.Error(err)
	}
	if err := CheckOutputFormat("xml", true); err == nil {
		t.Error("CheckOutputFormat accepted xml")
	}
}
