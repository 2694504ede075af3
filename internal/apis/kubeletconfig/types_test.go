package kubeletconfig

import "testing"

func TestWithTypeMeta(t *testing.T) {
	k := &KubeletConfiguration{ClusterDomain: "cluster.local"}
	c := k.WithTypeMeta()
	if c.APIVersion != "kubelet.config.k8s.io/v1beta1" || c.Kind != "KubeletConfiguration" || c.ClusterDomain != "cluster.local" {
		t.Errorf("copy %+v", c)
	}
	if k.APIVersion != "" || k.Kind != "" {
		t.Errorf("the original changed: %+v", k.TypeMeta)
	}
	k.APIVersion, k.Kind = "other/v1", "Other"
	if c := k.WithTypeMeta(); c.APIVersion != "other/v1" || c.Kind != "Other" {
		t.Errorf("set type fields replaced: %+v", c.TypeMeta)
	}
}
