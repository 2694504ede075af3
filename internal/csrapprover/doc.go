// Package csrapprover approves the certificate signing requests of the
// kubelets' serving certificates (signer kubernetes.io/kubelet-serving),
// which the controller manager never approves, for the CISHardening
// feature gate: with serverTLSBootstrap the kubelets ask the cluster CA for
// their serving certificates, so that the API server can verify them
// (--kubelet-certificate-authority).
//
// Check decides on one request: it must come from a node's own identity,
// name that node in its subject, ask for server authentication only, and
// carry no name or address its Node does not list, nor one another Node
// lists. Approver runs the
// loop that kubeadm's static Pod on every control-plane node runs (the
// hidden "kubeadm kubelet-serving-approver" command): it watches the
// requests, re-lists them every so often, and approves what passes; what
// fails is left pending, neither approved nor denied, and logged. Several
// approvers may run at once: approving is idempotent.
package csrapprover
