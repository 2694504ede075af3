package config

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// MarshalDocuments writes objs as a multi-document YAML stream.
func MarshalDocuments(objs ...any) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("writing %T as YAML: %w", o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// MarshalInit writes c as its InitConfiguration and ClusterConfiguration
// documents.
func MarshalInit(c *kubeadm.InitConfiguration) ([]byte, error) {
	init, cluster := InitToV1beta4(c)
	return MarshalDocuments(init, cluster)
}
