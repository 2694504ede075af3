// Package patches reads a folder of user patch files, as given by kubeadm's
// --patches flag or the configuration's patches.directory, and applies them
// to the documents kubeadm generates: the static Pod manifests, the kubelet
// configuration and the CoreDNS Deployment.
//
// A patch file is named "target[suffix][+patchtype].extension": target is
// one of Known(), patchtype one of strategic (the default), merge (RFC 7386)
// or json (RFC 6902), and extension json or yaml. Files are taken in the
// lexical order of their paths, sub-folders included, and a file may hold
// several YAML documents, each one patch. Files with another extension or
// an unknown target are ignored with a message; an unknown patch type is an
// error.
//
// Reading and applying patches changes nothing on disk.
package patches
