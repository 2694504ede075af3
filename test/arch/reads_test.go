package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReadsAreBounded: whole files and bodies are read through
// internal/boundedread, whose limits keep a hostile server or a mistaken
// file from taking kubeadm's memory (issue 29).
func TestReadsAreBounded(t *testing.T) {
	allowed := map[string]string{
		module + "/internal/boundedread": "the helper itself",
	}
	unbounded := []string{
		"os.ReadFile", "io.ReadAll", "io/ioutil.ReadFile", "io/ioutil.ReadAll",
		// client-go and crypto/tls read the whole file without a limit.
		"k8s.io/client-go/tools/clientcmd.LoadFromFile", "k8s.io/client-go/tools/clientcmd.BuildConfigFromFlags",
		"crypto/tls.LoadX509KeyPair",
	}
	for _, c := range calls(t, unbounded...) {
		if _, ok := allowed[c.pkg]; ok {
			continue
		}
		t.Errorf("%s: %s in %s; read through internal/boundedread with a named limit", c.pos, c.name, c.pkg)
	}
}

// TestHTTPClientsLimitRedirects: every http.Client our code makes says
// which redirects it follows (internal/redirectpolicy); Go's default
// follows them anywhere, from https to plain http included. Clients that
// client-go makes (rest.HTTPClientFor) get their policy where they are
// made, which this test cannot see.
func TestHTTPClientsLimitRedirects(t *testing.T) {
	allowed := map[string]string{
		// The dry-run client's transport answers in the process; nothing
		// is sent anywhere, so nothing can redirect.
		"internal/apiclient/dryrun.go": "in-process transport",
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, p := range ours(productPackages(t)) {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := allowed[rel]; ok {
				continue
			}
			httpName := ""
			for _, imp := range f.Imports {
				if ip, _ := strconv.Unquote(imp.Path.Value); ip == "net/http" {
					httpName = "http"
					if imp.Name != nil {
						httpName = imp.Name.Name
					}
				}
			}
			if httpName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				sel, ok := lit.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Client" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != httpName {
					return true
				}
				for _, e := range lit.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "CheckRedirect" {
							return true
						}
					}
				}
				t.Errorf("%s:%d: an http.Client without CheckRedirect; give it a rule of internal/redirectpolicy", rel, fset.Position(lit.Pos()).Line)
				return true
			})
		}
	}
}
