package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	sigsjson "sigs.k8s.io/json"
)

// locateDecodeError finds which field of a document made decoding into a
// value of obj's type fail, for errors that do not say so themselves (a
// custom unmarshaler such as a duration or a bootstrap token). It decodes
// each leaf of the document on its own and returns the path of the first
// that fails, like "bootstrapTokens[0].token", or "" if none does alone.
func locateDecodeError(js []byte, obj any) string {
	var tree any
	if err := json.Unmarshal(js, &tree); err != nil {
		return ""
	}
	typ := reflect.TypeOf(obj).Elem()
	var found string
	walkLeaves(tree, "", func(path string, pruned func(any) any) bool {
		b, err := json.Marshal(pruned(nil))
		if err != nil {
			return true
		}
		fresh := reflect.New(typ).Interface()
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(b, fresh); err != nil {
			found = path
			return false
		}
		return true
	})
	return found
}

// walkLeaves calls visit for every leaf value of tree with its path and a
// function that rebuilds a tree holding only that leaf (list elements are
// moved to index 0). visit returns false to stop.
func walkLeaves(tree any, path string, visit func(path string, pruned func(any) any) bool) bool {
	return walk(tree, path, func(leaf any) any { return leaf }, visit)
}

func walk(node any, path string, wrap func(any) any, visit func(string, func(any) any) bool) bool {
	switch n := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			k := k
			child := path + "." + k
			if path == "" {
				child = k
			}
			if !walk(n[k], child, func(v any) any { return wrap(map[string]any{k: v}) }, visit) {
				return false
			}
		}
		return true
	case []any:
		for i, v := range n {
			if !walk(v, path+"["+strconv.Itoa(i)+"]", func(v any) any { return wrap([]any{v}) }, visit) {
				return false
			}
		}
		return true
	default:
		leaf := node
		return visit(path, func(any) any { return wrap(leaf) })
	}
}

// decodeError names the field a decoding error is about, when the error
// does not already.
func decodeError(js []byte, obj any, err error) error {
	if path := locateDecodeError(js, obj); path != "" {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}
