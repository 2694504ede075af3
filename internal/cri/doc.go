// Package cri is kubeadm's one client of the Container Runtime Interface
// (k8s.io/cri-api runtime v1) and the image pulling built on it.
//
// Dial connects to a runtime over a unix socket and returns a Runtime:
// runtime status and configuration, image status and pulls, and listing,
// stopping and removing pod sandboxes and containers. Every call is
// bounded by Options.CallTimeout except PullImage, which may take as long
// as the caller's context allows, since images can be large.
//
// EnsureImages makes a list of images present under a pull policy
// (Always, IfNotPresent or Never), one at a time or a few at once, and
// reports every image that failed. Pulling an image that is present
// changes nothing, so EnsureImages may be called again after a failure.
//
// The package keeps no state between calls; a Runtime is safe for
// concurrent use and must be closed when done. Package critest holds an
// in-process fake runtime for tests.
package cri
