package componentbase_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	kubeproxyupstream "k8s.io/kube-proxy/config/v1alpha1"
	kubeletupstream "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeletconfig"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeproxyconfig"
)

// The upstream modules are the oracles: kubeadm's types must carry the
// same fields under the same JSON names and omissions, and every document
// must read and write the same.
var pairs = []struct {
	name     string
	upstream func() any
	ours     func() any
}{
	{"KubeletConfiguration", func() any { return &kubeletupstream.KubeletConfiguration{} }, func() any { return &kubeletconfig.KubeletConfiguration{} }},
	{"KubeProxyConfiguration", func() any { return &kubeproxyupstream.KubeProxyConfiguration{} }, func() any { return &kubeproxyconfig.KubeProxyConfiguration{} }},
}

func TestSameFieldsAsUpstream(t *testing.T) {
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			compareTypes(t, p.name, reflect.TypeOf(p.upstream()).Elem(), reflect.TypeOf(p.ours()).Elem())
		})
	}
}

// compareTypes fails for every JSON field of up that ours lacks or tags
// differently, and the other way round, recursing into structs; types
// outside the component packages (apimachinery, core/v1) must be the same.
func compareTypes(t *testing.T, path string, up, ours reflect.Type) {
	t.Helper()
	if up == ours {
		return
	}
	if up.Kind() != ours.Kind() {
		t.Errorf("%s: kind %s, upstream %s", path, ours.Kind(), up.Kind())
		return
	}
	switch up.Kind() {
	case reflect.Pointer, reflect.Slice:
		compareTypes(t, path+"[]", up.Elem(), ours.Elem())
	case reflect.Map:
		compareTypes(t, path+"{key}", up.Key(), ours.Key())
		compareTypes(t, path+"{}", up.Elem(), ours.Elem())
	case reflect.Struct:
		if !componentType(up) {
			t.Errorf("%s: type %s, upstream %s", path, ours, up)
			return
		}
		upFields, ourFields := jsonFields(up), jsonFields(ours)
		for name, uf := range upFields {
			of, ok := ourFields[name]
			if !ok {
				t.Errorf("%s.%s: missing", path, name)
				continue
			}
			if uf.tag != of.tag {
				t.Errorf("%s.%s: tag %q, upstream %q", path, name, of.tag, uf.tag)
			}
			compareTypes(t, path+"."+name, uf.typ, of.typ)
		}
		for name := range ourFields {
			if _, ok := upFields[name]; !ok {
				t.Errorf("%s.%s: not upstream's", path, name)
			}
		}
	default:
		// Named strings and integers (modes, verbosity) are kept as
		// their kind.
	}
}

func componentType(t reflect.Type) bool {
	for _, prefix := range []string{"k8s.io/kubelet/", "k8s.io/kube-proxy/", "k8s.io/component-base/", "github.com/kubeadm-go/kubeadm/internal/apis/"} {
		if strings.HasPrefix(t.PkgPath(), prefix) {
			return true
		}
	}
	return false
}

type field struct {
	tag string
	typ reflect.Type
}

// jsonFields maps the JSON names of t's fields to their tag and type;
// the fields of inlined and embedded structs appear under their own names.
func jsonFields(t reflect.Type) map[string]field {
	out := map[string]field{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		inline := strings.Contains(tag, ",inline") || (f.Anonymous && name == "")
		if inline && f.Type.Kind() == reflect.Struct && componentType(f.Type) {
			for n, sub := range jsonFields(f.Type) {
				out[n] = sub
			}
			continue
		}
		if inline {
			name = "(" + f.Type.Name() + ")"
		}
		if name == "" {
			name = f.Name
		}
		out[name] = field{tag: strings.TrimPrefix(tag, name), typ: f.Type}
	}
	return out
}

// Random documents made with upstream's types, read and written again by
// ours, come out as upstream's do; so does the empty one.
func TestSameDocumentsAsUpstream(t *testing.T) {
	fill := randfill.NewWithSeed(1).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<20), resource.BinarySI)
		},
	)
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			for i := range 300 {
				up := p.upstream()
				if i > 0 {
					fill.Fill(up)
				}
				doc, err := yaml.Marshal(up)
				if err != nil {
					t.Fatal(err)
				}
				// What upstream writes after reading doc is what ours must.
				want := rewrite(t, doc, p.upstream())
				got := rewrite(t, doc, p.ours())
				if d := diffJSON(t, got, want); d != "" {
					t.Fatalf("document %d written differently: %s", i, d)
				}
			}
		})
	}
}

// rewrite reads doc strictly into obj and writes obj again.
func rewrite(t *testing.T, doc []byte, obj any) []byte {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("reading into %T: %v\n%s", obj, err, doc)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffJSON names a top-level field in which two documents differ, or
// returns "" when they are the same.
func diffJSON(t *testing.T, a, b []byte) string {
	t.Helper()
	var x, y map[string]any
	if err := yaml.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	for k := range merged(x, y) {
		xs, _ := json.Marshal(x[k])
		ys, _ := json.Marshal(y[k])
		if string(xs) != string(ys) {
			return fmt.Sprintf("%s: %s, upstream %s", k, xs, ys)
		}
	}
	return ""
}

func merged(x, y map[string]any) map[string]bool {
	keys := map[string]bool{}
	for k := range x {
		keys[k] = true
	}
	for k := range y {
		keys[k] = true
	}
	return keys
}
