package cis

// AuditPolicy is the audit policy kubeadm writes to AuditPolicyFile when
// the file is missing (an administrator's own policy there is kept):
//
//   - nothing for the health and version endpoints, the kubelets' and
//     controllers' leases and the Events stream, which would drown the log;
//   - only the metadata (who, what, when, outcome) of anything touching
//     Secrets, ConfigMaps, service-account tokens and token reviews, whose
//     bodies hold credentials, and of every read;
//   - the request body of every other change;
//   - the metadata of whatever else is left.
//
// The RequestReceived stage is dropped: each request is logged once it is
// answered.
func AuditPolicy() []byte {
	return []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
# Written by kubeadm (CISHardening); kubeadm keeps this file as you edit it.
omitStages:
- RequestReceived
rules:
- level: None
  nonResourceURLs:
  - /healthz*
  - /livez*
  - /readyz*
  - /version
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
  resources:
  - group: ""
    resources: ["events"]
  - group: events.k8s.io
    resources: ["events"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps", "serviceaccounts/token"]
  - group: authentication.k8s.io
    resources: ["tokenreviews"]
- level: Metadata
  verbs: ["get", "list", "watch"]
- level: Request
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
`)
}

// AdmissionConfig is the admission configuration kubeadm writes to
// AdmissionConfigFile when the file is missing: the limits of
// EventRateLimit, per namespace and per user, generous enough for a busy
// cluster and low enough that one runaway client cannot flood etcd with
// Events.
func AdmissionConfig() []byte {
	return []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
# Written by kubeadm (CISHardening); kubeadm keeps this file as you edit it.
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - type: Namespace
      qps: 50
      burst: 100
      cacheSize: 2000
    - type: User
      qps: 10
      burst: 50
      cacheSize: 2000
`)
}
