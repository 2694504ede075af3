// Package critest runs an in-process fake container runtime that speaks
// the CRI v1 gRPC API on a unix socket, for tests of code that uses
// package cri. It keeps images, pod sandboxes and containers in memory and
// records what was asked of it. Production code never imports it.
package critest
