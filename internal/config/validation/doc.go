// Package validation checks kubeadm configurations that have already been
// defaulted (static and dynamic defaults) and reports every problem at once
// as a field.ErrorList whose paths use the file format's spelling, e.g.
// "networking.serviceSubnet" or "bootstrapTokens.0.usages".
//
// The rules follow what kubeadm v1.36 accepts and refuses: a configuration
// the reference tool accepts must validate here, and one it refuses must not.
// Non-fatal findings (the reference tool prints them as warnings) are returned
// separately by ClusterConfigurationWarnings.
//
// Nothing here changes the configuration. The only outside world touched is
// the filesystem, to see whether a discovery kubeconfig file exists.
package validation
