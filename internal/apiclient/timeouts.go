package apiclient

import (
	"time"

	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// RequestTimeout is the bound of each request of a client this package
// makes: d, or when d is not positive the default of
// timeouts.kubernetesAPICall (v1beta4.DefaultKubernetesAPICall), so that
// no client waits for an answer without a bound.
//
// The bound is the client's rest.Config.Timeout: client-go gives every
// request a context with that deadline (also when the caller's context
// has none, as client-go's ServerVersion) and the HTTP client the same
// overall timeout, reading the answer included. Under it, client-go's
// transport bounds each connection attempt (30 s) and each TLS handshake
// (10 s). Waits that take longer on purpose (for the control plane to
// come up, for a Node to register) are polls of such requests, under a
// deadline of their own.
func RequestTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return v1beta4.DefaultKubernetesAPICall
}
