package kubeadm

import (
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Kinds of the component configuration documents. Their groups and
// versions are those of k8s.io/kubelet/config/v1beta1 and
// k8s.io/kube-proxy/config/v1alpha1 (SchemeGroupVersion).
const (
	KindKubeletConfiguration   = "KubeletConfiguration"
	KindKubeProxyConfiguration = "KubeProxyConfiguration"
)

// KubeletDocument returns a copy of k with apiVersion and kind set where k
// leaves them empty, as a written document needs them. Only the top level
// is copied: the copy shares k's lists, maps and pointers.
func KubeletDocument(k *kubeletv1beta1.KubeletConfiguration) *kubeletv1beta1.KubeletConfiguration {
	c := *k
	if c.APIVersion == "" {
		c.APIVersion = kubeletv1beta1.SchemeGroupVersion.String()
	}
	if c.Kind == "" {
		c.Kind = KindKubeletConfiguration
	}
	return &c
}
