package kubeadm

import (
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestKubeletDocument(t *testing.T) {
	k := &kubeletv1beta1.KubeletConfiguration{ClusterDomain: "cluster.local"}
	c := KubeletDocument(k)
	if c.APIVersion != "kubelet.config.k8s.io/v1beta1" || c.Kind != "KubeletConfiguration" || c.ClusterDomain != "cluster.local" {
		t.Errorf("copy %+v", c)
	}
	if k.APIVersion != "" || k.Kind != "" {
		t.Errorf("the original changed: %+v", k.TypeMeta)
	}
	k.APIVersion, k.Kind = "other/v1", "Other"
	if c := KubeletDocument(k); c.APIVersion != "other/v1" || c.Kind != "Other" {
		t.Errorf("set type fields replaced: %+v", c.TypeMeta)
	}
}
