// Package apiclient talks to the cluster's API server for kubeadm: it
// builds client-go's typed clientset from kubeconfig files, each client
// with a bound on every request, a cap on every answer, a rule for
// redirects and refusals that say what was refused and to whom; it makes
// sure the admin credentials are authorized; it gives a dry-run client
// (the clientset over a transport that answers in the process and changes
// nothing); and it creates or updates objects so that every API phase can
// be run again and converge.
package apiclient
