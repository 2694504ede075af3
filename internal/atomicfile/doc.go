// Package atomicfile writes files so that a reader, or a crash, only ever
// sees the old content or the new content in full. It is the one way this
// project writes keys, kubeconfigs, manifests and configuration files.
package atomicfile
