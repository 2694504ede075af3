// Package podrestart restarts the container of a static Pod (a
// control-plane component) through the container runtime and waits until
// the kubelet runs a new one that answers its health endpoint.
//
// Why through the runtime, and not by rewriting the Pod's manifest, is
// docs/decisions/008-restarting-components-after-renewal.md: stopping the
// container keeps the Pod, its manifest and its mirror Pod as they are;
// the kubelet sees the container exit and starts it again at once, as its
// restart policy says.
//
// A Restarter is meant to be used one component at a time, so that a
// control plane never has two components down at once; it keeps no state
// between calls and may be called again for the same component.
package podrestart
