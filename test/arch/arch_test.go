package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/kubeadm-go/kubeadm"

// pkg is what `go list -json` says of a package that we use here.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Standard   bool
}

// productPackages lists every package the kubeadm binary links.
func productPackages(t *testing.T) []pkg {
	t.Helper()
	return listDeps(t, "./cmd/kubeadm")
}

// listDeps lists the given packages and every package they import.
func listDeps(t *testing.T, patterns ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, patterns...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func ours(pkgs []pkg) []pkg {
	var out []pkg
	for _, p := range pkgs {
		if p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/") {
			out = append(out, p)
		}
	}
	return out
}

// TestLinkedPackages: the binary never links Kubernetes' own tree (rule 8);
// it reaches etcd through etcd's client and restores with etcd's restore
// library, and it has no hand-written stand-in for them (rule 9); it
// reaches the API server through client-go's typed clientset; and our
// packages import neither a YAML library other than sigs.k8s.io/yaml
// (rule 6) nor test helpers (ours, or client-go's fakes).
func TestLinkedPackages(t *testing.T) {
	pkgs := productPackages(t)
	linked := map[string]bool{}
	for _, p := range pkgs {
		linked[p.ImportPath] = true
		if p.ImportPath == "k8s.io/kubernetes" || strings.HasPrefix(p.ImportPath, "k8s.io/kubernetes/") {
			t.Errorf("the binary links %s", p.ImportPath)
		}
		if strings.HasPrefix(p.ImportPath, "k8s.io/client-go/") && (strings.HasSuffix(p.ImportPath, "/fake") || strings.Contains(p.ImportPath, "/fake/")) {
			t.Errorf("the binary links client-go's test fake %s", p.ImportPath)
		}
		if p.ImportPath == module+"/internal/etcdrpc" {
			t.Errorf("the binary links %s; etcd is reached with its own client (rule 9)", p.ImportPath)
		}
	}
	for _, want := range []string{"go.etcd.io/etcd/client/v3", "go.etcd.io/etcd/etcdutl/v3/snapshot"} {
		if !linked[want] {
			t.Errorf("the binary does not link %s (rule 9: etcd's own libraries reach it and restore its data)", want)
		}
	}
	if !linked["k8s.io/client-go/kubernetes"] {
		t.Error("the binary does not link k8s.io/client-go/kubernetes (rule 9: client-go's typed clientset reaches the API server)")
	}
	if linked[module+"/internal/kubeclient"] {
		t.Errorf("the binary links %s; the API server is reached with client-go's clientset", module+"/internal/kubeclient")
	}
	// Every etcd request goes through etcd's client, and restores through
	// its restore library: only internal/etcd imports them.
	for _, p := range ours(pkgs) {
		for _, imp := range p.Imports {
			switch {
			case imp == "go.etcd.io/etcd/client/v3" && p.ImportPath != module+"/internal/etcd":
				t.Errorf("%s imports etcd's client; reach etcd through internal/etcd", p.ImportPath)
			case imp == "go.etcd.io/etcd/etcdutl/v3/snapshot" && p.ImportPath != module+"/internal/etcd":
				t.Errorf("%s imports etcd's restore library; snapshots are internal/etcd's", p.ImportPath)
			case strings.HasPrefix(imp, "google.golang.org/grpc") && strings.HasPrefix(p.ImportPath, module+"/internal/etcd/"):
				t.Errorf("%s speaks gRPC itself; etcd's client does", p.ImportPath)
			}
		}
	}
	for _, p := range ours(pkgs) {
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(imp, "gopkg.in/yaml."), strings.HasPrefix(imp, "go.yaml.in/"), imp == "github.com/ghodss/yaml":
				t.Errorf("%s imports %s; YAML goes through sigs.k8s.io/yaml", p.ImportPath, imp)
			case imp == "testing", strings.HasPrefix(imp, module+"/test/"), strings.HasSuffix(imp, "test") && strings.HasPrefix(imp, module+"/"):
				t.Errorf("%s imports the test helper %s", p.ImportPath, imp)
			}
		}
	}
}

// call is a use of a function of a standard package, found in our source.
type call struct {
	pkg, name string
	args      []ast.Expr
	pos       string
}

// calls returns the calls of our product packages (test files left out)
// to the functions named ("import/path.Name").
func calls(t *testing.T, want ...string) []call {
	t.Helper()
	return callsIn(t, func(ip, name string) bool { return slices.Contains(want, ip+"."+name) })
}

// callsIn returns the calls of our product packages (test files left out)
// to the functions of other packages that match says are wanted, given
// the import path of their package and their name.
func callsIn(t *testing.T, match func(importPath, name string) bool) []call {
	t.Helper()
	var out []call
	fset := token.NewFileSet()
	for _, p := range ours(productPackages(t)) {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			local := map[string]string{} // local name -> import path
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				n := filepath.Base(ip)
				if major, err := strconv.Atoi(strings.TrimPrefix(n, "v")); err == nil && major > 1 && strings.HasPrefix(n, "v") {
					n = filepath.Base(filepath.Dir(ip)) // k8s.io/klog/v2 is package klog
				}
				if imp.Name != nil {
					n = imp.Name.Name
				}
				local[n] = ip
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ce, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := ce.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				ip, ok := local[id.Name]
				if !ok {
					return true
				}
				if match(ip, sel.Sel.Name) {
					rel, _ := filepath.Rel(filepath.Join(p.Dir, "..", ".."), path)
					pos := fset.Position(ce.Pos())
					out = append(out, call{pkg: p.ImportPath, name: ip + "." + sel.Sel.Name, args: ce.Args, pos: rel + ":" + strconv.Itoa(pos.Line)})
				}
				return true
			})
		}
	}
	return out
}

// TestOnlyMainExits: only main ends the process, through exitcode.Of
// (rule 1); everything else returns its error.
func TestOnlyMainExits(t *testing.T) {
	for _, c := range calls(t, "os.Exit", "log.Fatal", "log.Fatalf", "log.Fatalln") {
		if c.pkg != module+"/cmd/kubeadm" || c.name != "os.Exit" {
			t.Errorf("%s: %s in %s; return the error to main instead", c.pos, c.name, c.pkg)
		}
	}
}

// TestWritesAreAtomic: files are written through internal/atomicfile
// (rule 5). The exceptions copy data into a new folder of their own, where
// a file left half-written by a crash is never read as a whole one.
func TestWritesAreAtomic(t *testing.T) {
	allowed := map[string]string{
		module + "/internal/atomicfile": "the helper itself",
		// etcd's data folder is copied file by file (O_EXCL) into a new
		// folder of its own: the backup before an upgrade (put back by
		// its rollback), and the content a restore moves aside from a
		// mount point.
		module + "/internal/etcd": "etcd data folder copies",
		// The renewal's lock file is opened to hold a flock; nothing is
		// written to it.
		module + "/internal/certrenewal": "renewal lock file",
	}
	for _, c := range calls(t, "os.WriteFile", "os.Create", "os.OpenFile", "io/ioutil.WriteFile") {
		if _, ok := allowed[c.pkg]; ok {
			continue
		}
		if c.name == "os.OpenFile" && len(c.args) > 1 && readOnly(c.args[1]) {
			continue
		}
		t.Errorf("%s: %s in %s; write files through internal/atomicfile", c.pos, c.name, c.pkg)
	}
}

// readOnly reports whether the flags argument of os.OpenFile is plainly
// os.O_RDONLY.
func readOnly(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "O_RDONLY"
}

// TestClientsAreBounded: clients of the API server are made where every
// request gets a timeout, its answer a size cap and its redirects a rule
// (rules 10 and 11): internal/apiclient (FromKubeconfig, FromConfig,
// FromRESTConfig, whose requests are bounded by timeouts.kubernetesAPICall)
// and token discovery, which bounds its own. No other package builds a
// clientset, a client of one API group, a discovery client or a REST
// client. etcd's connections are made by internal/etcd, whose
// Config requires dial, call and retry timeouts.
func TestClientsAreBounded(t *testing.T) {
	makers := map[string][]string{
		"k8s.io/client-go/kubernetes.NewForConfig":                      {module + "/internal/apiclient"},
		"k8s.io/client-go/kubernetes.NewForConfigAndClient":             {module + "/internal/apiclient", module + "/internal/discovery"},
		"k8s.io/client-go/kubernetes.NewForConfigOrDie":                 nil,
		"k8s.io/client-go/kubernetes.New":                               nil,
		"k8s.io/client-go/rest.HTTPClientFor":                           {module + "/internal/apiclient", module + "/internal/discovery"},
		"k8s.io/client-go/rest.RESTClientFor":                           nil,
		"k8s.io/client-go/rest.UnversionedRESTClientFor":                nil,
		"k8s.io/client-go/rest.RESTClientForConfigAndClient":            nil,
		"k8s.io/client-go/rest.UnversionedRESTClientForConfigAndClient": nil,
		"go.etcd.io/etcd/client/v3.New":                                 {module + "/internal/etcd"},
	}
	names := make([]string, 0, len(makers))
	for n := range makers {
		names = append(names, n)
	}
	for _, c := range calls(t, names...) {
		if !slices.Contains(makers[c.name], c.pkg) {
			t.Errorf("%s: %s in %s; make clients through internal/apiclient (API server) or internal/etcd (etcd), which bound every request", c.pos, c.name, c.pkg)
		}
	}
	// The clients of one API group (k8s.io/client-go/kubernetes/typed/...)
	// and discovery clients have constructors of their own.
	for _, c := range callsIn(t, func(ip, name string) bool {
		return (strings.HasPrefix(ip, "k8s.io/client-go/kubernetes/typed/") || ip == "k8s.io/client-go/discovery" ||
			ip == "k8s.io/client-go/dynamic" || ip == "k8s.io/client-go/metadata") && strings.HasPrefix(name, "New")
	}) {
		t.Errorf("%s: %s in %s; make clients through internal/apiclient, which bounds every request", c.pos, c.name, c.pkg)
	}
}

// TestLogsAreFiltered: only internal/redact changes where klog's lines go
// or which logger writes them (rule 7): a logger set elsewhere, or kept
// in a context, could go around the filter that hides secrets in
// client-go's verbose logging.
func TestLogsAreFiltered(t *testing.T) {
	for _, c := range calls(t, "k8s.io/klog/v2.SetLogger", "k8s.io/klog/v2.SetLoggerWithOptions", "k8s.io/klog/v2.SetLogFilter",
		"k8s.io/klog/v2.EnableContextualLogging", "k8s.io/klog/v2.NewContext", "k8s.io/klog/v2.SetOutput",
		"k8s.io/klog/v2.SetOutputBySeverity", "k8s.io/klog/v2.LogToStderr", "k8s.io/klog/v2.ClearLogger") {
		if c.pkg != module+"/internal/redact" {
			t.Errorf("%s: %s in %s; klog's output is set up by internal/redact alone", c.pos, c.name, c.pkg)
		}
	}
}
