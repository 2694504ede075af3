package addons

import (
	"bytes"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
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

// KeptReplicas is the replica count a DNS addon's Deployment called name
// keeps from the DNS Deployments found (those labelled k8s-app=kube-dns,
// CoreDNS's and kube-dns's): its own when it exists, else that of the only
// one (the other addon's, which it replaces), else nil.
func KeptReplicas(found []appsv1.Deployment, name string) *int32 {
	for _, d := range found {
		if d.Name == name && d.Spec.Replicas != nil {
			n := *d.Spec.Replicas
			return &n
		}
	}
	if len(found) == 1 && found[0].Spec.Replicas != nil {
		n := *found[0].Spec.Replicas
		return &n
	}
	return nil
}
