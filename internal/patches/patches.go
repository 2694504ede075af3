package patches

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// The targets a patch file can name.
const (
	TargetEtcd                  = "etcd"
	TargetKubeAPIServer         = "kube-apiserver"
	TargetKubeControllerManager = "kube-controller-manager"
	TargetKubeScheduler         = "kube-scheduler"
	TargetKubeletConfiguration  = "kubeletconfiguration"
	TargetCoreDNSDeployment     = "corednsdeployment"
	TargetKubeProxyDaemonSet    = "kubeproxydaemonset"
)

// Known returns the targets a patch file can name, in the order kubeadm
// lists them in its messages.
func Known() []string {
	return []string{
		TargetEtcd,
		TargetKubeAPIServer,
		TargetKubeControllerManager,
		TargetKubeScheduler,
		TargetKubeletConfiguration,
		TargetCoreDNSDeployment,
		TargetKubeProxyDaemonSet,
	}
}

// Type is the format of a patch, as written after "+" in a file name.
type Type string

// The patch types.
const (
	Strategic Type = "strategic"
	Merge     Type = "merge"
	JSON      Type = "json"
)

// types lists the patch types in the order messages name them.
func types() []Type { return []Type{JSON, Merge, Strategic} }

// MediaType is the content type of the patch type, the name messages use.
func (t Type) MediaType() string {
	switch t {
	case Strategic:
		return "application/strategic-merge-patch+json"
	case Merge:
		return "application/merge-patch+json"
	case JSON:
		return "application/json-patch+json"
	}
	return string(t)
}

// extensions are the accepted file extensions, in message order.
func extensions() []string { return []string{"json", "yaml"} }

// Patch is one document of a patch file.
type Patch struct {
	// File is the path of the patch file, Document the position of the
	// patch among the file's documents, from 1.
	File     string
	Document int
	Target   string
	Type     Type
	// JSON is the patch, converted to JSON.
	JSON []byte
}

// Set is the content of a patches folder.
type Set struct {
	// Dir is the folder the patches were read from.
	Dir string
	// Patches are in the order they apply.
	Patches []Patch
}

// Load reads the patch files under dir (sub-folders included), reporting to
// out which files it uses and which it ignores. dir must be a folder, not a
// symbolic link to one. Files are taken in the lexical order of their
// paths; within a file, documents in their order; documents holding only
// white space are dropped.
func Load(dir string, out io.Writer) (*Set, error) {
	fmt.Fprintf(out, "[patches] Reading patches from path %q\n", dir)
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the patches folder: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("reading the patches folder %s: not a folder", dir)
	}
	set := &Set{Dir: dir}
	var found, ignored []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		base := d.Name()
		target, typ, reason, err := ParseFileName(base)
		if err != nil {
			return fmt.Errorf("patch file %s: %w", path, err)
		}
		if reason != "" {
			fmt.Fprintf(out, "[patches] Ignoring file %q: %s\n", base, reason)
			ignored = append(ignored, base)
			return nil
		}
		data, err := boundedread.ReadFile(path, boundedread.MaxFile)
		if err != nil {
			return fmt.Errorf("reading patch file: %w", err)
		}
		if len(data) == 0 {
			fmt.Fprintf(out, "[patches] Ignoring empty file: %q\n", base)
			ignored = append(ignored, base)
			return nil
		}
		docs, err := documents(data)
		if err != nil {
			return fmt.Errorf("patch file %s: %w", path, err)
		}
		for i, doc := range docs {
			set.Patches = append(set.Patches, Patch{File: path, Document: i + 1, Target: target, Type: typ, JSON: doc})
		}
		found = append(found, base)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the patches folder %s: %w", dir, err)
	}
	if len(found) > 0 {
		fmt.Fprintf(out, "[patches] Found the following patch files: %v\n", found)
	}
	if len(ignored) > 0 {
		fmt.Fprintf(out, "[patches] Ignored the following files: %v\n", ignored)
	}
	return set, nil
}

// Check reads the patch files under dir as Load does, without reporting
// them, so that a command can refuse a folder it could not use (missing,
// not a folder, a file of an unknown patch type, a document that is
// neither YAML nor JSON) before it changes anything. Whether a patch
// applies is only known once its target exists.
func Check(dir string) error {
	_, err := Load(dir, io.Discard)
	return err
}

// ParseFileName splits the base name of a patch file into its target and
// patch type. A file kubeadm ignores (wrong extension, unknown target)
// gives a non-empty reason; an unknown patch type is an error.
func ParseFileName(base string) (target string, typ Type, reason string, err error) {
	dot := strings.LastIndexByte(base, '.')
	if dot <= 0 || !contains(extensions(), base[dot+1:]) {
		return "", "", fmt.Sprintf("the file extension must be one of %v", extensions()), nil
	}
	// The name part ends at the first dot: "etcd.old.yaml" patches etcd.
	stem := base[:strings.IndexByte(base, '.')]
	nameAndSuffix, typePart, hasType := strings.Cut(stem, "+")
	for _, t := range Known() {
		if strings.HasPrefix(nameAndSuffix, t) {
			target = t
			break
		}
	}
	if target == "" {
		return "", "", fmt.Sprintf("unknown target, must be one of %v", Known()), nil
	}
	typ = Strategic
	if hasType {
		// Anything after a second "+" is part of the suffix.
		typePart, _, _ = strings.Cut(typePart, "+")
		typ = Type(typePart)
		if !contains(types(), typ) {
			return "", "", "", fmt.Errorf("unknown or missing patch type after '+' in %q, must be one of %v", base, types())
		}
	}
	return target, typ, "", nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// documents splits a patch file into its YAML documents, each converted to
// JSON. Documents of white space only are dropped; a document holding only
// comments or "---" becomes "null".
func documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("splitting into documents: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d is not valid YAML or JSON: %w", len(docs)+1, err)
		}
		docs = append(docs, js)
	}
}

// For returns the patches of target, in the order they apply.
func (s *Set) For(target string) []Patch {
	if s == nil {
		return nil
	}
	var ps []Patch
	for _, p := range s.Patches {
		if p.Target == target {
			ps = append(ps, p)
		}
	}
	return ps
}

// Apply applies the set's patches for target to doc, in order, and reports
// each to out. doc may be JSON or YAML; the result is JSON when doc is
// JSON and YAML otherwise. Without patches for target, doc is returned
// unchanged.
func (s *Set) Apply(target string, doc []byte, out io.Writer) ([]byte, error) {
	ps := s.For(target)
	if len(ps) == 0 {
		return doc, nil
	}
	isJSON := utilyaml.IsJSONBuffer(doc)
	cur := doc
	if !isJSON {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("converting the %s document to JSON: %w", target, err)
		}
		cur = js
	}
	for _, p := range ps {
		next, err := applyOne(p, cur)
		if err != nil {
			return nil, fmt.Errorf("applying the %s patch in %s (document %d) to %s: %w", p.Type, p.File, p.Document, target, err)
		}
		cur = next
		fmt.Fprintf(out, "[patches] Applied patch of type %q to target %q\n", p.Type.MediaType(), target)
	}
	if isJSON {
		return cur, nil
	}
	y, err := yaml.JSONToYAML(cur)
	if err != nil {
		return nil, fmt.Errorf("converting the patched %s document to YAML: %w", target, err)
	}
	return y, nil
}

func applyOne(p Patch, doc []byte) ([]byte, error) {
	switch p.Type {
	case Strategic:
		schema, err := schemaFor(p.Target)
		if err != nil {
			return nil, err
		}
		return strategicpatch.StrategicMergePatch(doc, p.JSON, schema)
	case Merge:
		return jsonpatch.MergePatch(doc, p.JSON)
	case JSON:
		jp, err := jsonpatch.DecodePatch(p.JSON)
		if err != nil {
			return nil, err
		}
		return jp.Apply(doc)
	}
	return nil, fmt.Errorf("unknown patch type %q", p.Type)
}

// schemaFor returns a value of the Go type of target's documents, which a
// strategic merge patch needs for its merge keys and strategies.
func schemaFor(target string) (any, error) {
	switch target {
	case TargetEtcd, TargetKubeAPIServer, TargetKubeControllerManager, TargetKubeScheduler:
		return corev1.Pod{}, nil
	case TargetKubeletConfiguration:
		return kubeletv1beta1.KubeletConfiguration{}, nil
	case TargetCoreDNSDeployment:
		return appsv1.Deployment{}, nil
	case TargetKubeProxyDaemonSet:
		return appsv1.DaemonSet{}, nil
	}
	return nil, fmt.Errorf("no strategic merge schema for target %q", target)
}

// Apply reads the patches under dir and applies those for target to doc
// (see Load and Set.Apply). An empty dir applies nothing and prints
// nothing. Nothing is written to disk.
func Apply(dir, target string, doc []byte, out io.Writer) ([]byte, error) {
	if dir == "" {
		return doc, nil
	}
	set, err := Load(dir, out)
	if err != nil {
		return nil, err
	}
	return set.Apply(target, doc, out)
}

// ApplyTo applies the set's patches for target to obj, an API object with
// its apiVersion and kind set, and returns the patched copy, reporting
// each patch to out. Fields a patch adds that T does not have are dropped;
// a patch that changes the document's apiVersion or kind is an error.
// Without patches for target, obj itself is returned.
func ApplyTo[T any](s *Set, target string, obj *T, out io.Writer) (*T, error) {
	if len(s.For(target)) == 0 {
		return obj, nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("serialising the %s document: %w", target, err)
	}
	before, err := typeOf(doc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s document: %w", target, err)
	}
	patched, err := s.Apply(target, doc, out)
	if err != nil {
		return nil, err
	}
	after, err := typeOf(patched)
	if err != nil {
		return nil, fmt.Errorf("reading the patched %s document: %w", target, err)
	}
	if after != before {
		return nil, fmt.Errorf("the patched %s document is a %q of apiVersion %q, no longer a %q of apiVersion %q",
			target, after.Kind, after.APIVersion, before.Kind, before.APIVersion)
	}
	var res T
	if err := utiljson.Unmarshal(patched, &res); err != nil {
		return nil, fmt.Errorf("reading the patched %s document: %w", target, err)
	}
	return &res, nil
}

// typeMeta is the apiVersion and kind of a document.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func typeOf(doc []byte) (typeMeta, error) {
	var t typeMeta
	err := utiljson.Unmarshal(doc, &t)
	return t, err
}
