package kubeadm

import (
	"time"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// KubernetesAPICall is t's timeouts.kubernetesAPICall, the bound of each
// request to the API server, or its default when t leaves it unset.
func KubernetesAPICall(t *Timeouts) time.Duration {
	if t != nil && t.KubernetesAPICall != nil && t.KubernetesAPICall.Duration > 0 {
		return t.KubernetesAPICall.Duration
	}
	return v1beta4.DefaultKubernetesAPICall
}

// EtcdAPICall is t's timeouts.etcdAPICall, the bound of each operation on
// etcd (its retries included), or its default when t leaves it unset.
func EtcdAPICall(t *Timeouts) time.Duration {
	if t != nil && t.EtcdAPICall != nil && t.EtcdAPICall.Duration > 0 {
		return t.EtcdAPICall.Duration
	}
	return v1beta4.DefaultEtcdAPICall
}
