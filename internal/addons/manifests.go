package addons

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Manifests renders objs as a YAML stream, each document preceded by
// "---" and without its status, which only the cluster fills in: what
// "kubeadm init phase addon ... --print-manifest" prints.
func Manifests(objs ...any) ([]byte, error) {
	var buf bytes.Buffer
	for _, o := range objs {
		js, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("writing %T as JSON: %w", o, err)
		}
		var fields map[string]any
		if err := json.Unmarshal(js, &fields); err != nil {
			return nil, fmt.Errorf("reading %T back: %w", o, err)
		}
		delete(fields, "status")
		b, err := yaml.Marshal(fields)
		if err != nil {
			return nil, fmt.Errorf("writing %T as YAML: %w", o, err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
