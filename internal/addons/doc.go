// Package addons holds what the CoreDNS and kube-proxy addons (its
// sub-packages) share: how their objects are printed.
package addons
