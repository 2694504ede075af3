// Package v1beta3 holds the Go types of the older kubeadm configuration
// format kubeadm.k8s.io/v1beta3. kubeadm still reads it, with a deprecation
// warning, and converts it to the current format; it never writes it.
package v1beta3
