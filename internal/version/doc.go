// Package version knows which release of this tool is running, which
// Kubernetes release it is built to deploy, and how to turn a
// --kubernetes-version value (a version or a release label such as "stable"
// or "latest-1.36") into a concrete version.
package version
