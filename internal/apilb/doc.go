// Package apilb is the node-local API server load balancer of the
// NodeLocalAPILoadBalancer feature gate (docs/decisions/009): a TCP
// forwarder on a loopback address that sends each connection to a healthy
// kube-apiserver of the cluster, without terminating TLS.
//
// A Balancer holds the upstream list (SetUpstreams), probes each upstream's
// /readyz (a Prober) on a fixed interval, marks an upstream down on the
// first failed probe or dial and up on the first good probe, and closes
// the connections it forwarded to an upstream that went down, so that
// clients reconnect at once. It prefers one upstream (this node's own API
// server on a control-plane node) while that one is healthy, and spreads
// connections round robin over the healthy ones otherwise.
//
// Watch learns the upstreams from the `kubernetes` EndpointSlice of the
// default namespace; ReadUpstreams and WriteUpstreams keep the last list
// on disk so the balancer can start before any API server answers.
package apilb

// FeatureGate is the kubeadm feature gate that turns the balancer on.
const FeatureGate = "NodeLocalAPILoadBalancer"

// Enabled reports whether gates (ClusterConfiguration.featureGates) turn
// the balancer on.
func Enabled(gates map[string]bool) bool { return gates[FeatureGate] }

// URL is the API server address of the kubeconfigs that go through the
// balancer; they check the certificate against ServerName.
const URL = "https://" + ListenAddress
