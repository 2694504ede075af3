// Package redact hides secrets in what kubeadm logs and prints: bootstrap
// token secrets, certificate keys (the key of "init --upload-certs"),
// credentials (Authorization headers, a kubeconfig's token and client key,
// PEM private keys) and the data of Secret objects.
//
// # Logs
//
// client-go logs its requests and answers through klog from -v=6 on: at
// -v=8 and above the bodies too, a Secret's data with them (the bootstrap
// token Secrets, the encrypted kubeadm-certs Secret). InstallKlogFilter
// sets a klog LogFilter (Filter) that every klog call passes through, the
// structured calls of client-go's contextual loggers included: klog's
// fallback logger routes them into klog's own output, and contextual
// logging is turned off so that no logger a library puts into a context
// goes around the filter. The filter hides, in every message and every
// value:
//
//   - in bodies (JSON, also when client-go cut them short), the values of
//     "data" and "stringData" of every object that is a Secret or does not
//     say what it is (a patch, an item of a list of Secrets, the object of
//     a watch event), keys kept; a body client-go shows as a hex dump (a
//     protocol buffer, or any text with control characters) is left out
//     whole, kubeadm's clients speak JSON;
//   - anywhere: "<id>.<secret>" bootstrap tokens (the ID stays),
//     credentials after "Authorization:" or "Bearer", the values of
//     kubeconfig "token", "client-key-data" and "password" entries, PEM
//     private keys, and runs of 64 hexadecimal digits (certificate keys)
//     unless they follow "sha256:" (a digest, a CA pin).
//
// What kubeadm prints on purpose (the join command, "token create",
// the certificate key of "init --upload-certs") goes to standard output,
// not through klog, and is left alone.
//
// # Printed objects
//
// Secret hides a Secret's data in an object a dry run prints.
package redact
