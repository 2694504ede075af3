// Package config turns kubeadm configuration files and flags into the
// internal representation (internal/apis/kubeadm) and back.
//
// Loading a file goes through the same steps for every kind: split the YAML
// stream into documents, identify each by apiVersion and kind, decode it into
// its versioned Go type (refusing or warning about unknown and duplicated
// fields), convert older versions forward to v1beta4, apply v1beta4's static
// defaults, convert to the internal types, and finally apply the dynamic
// defaults that depend on the machine (node name, advertise address, CRI
// socket, Kubernetes version, a fresh bootstrap token). Validation is a
// separate step (package config/validation) so callers can print a config
// that does not validate yet.
//
// Nothing here writes files or keeps package state; machine look-ups are
// injected through Environment.
package config
