// Package apiclient talks to the cluster's API server for kubeadm: building
// clients from kubeconfig files, making sure the admin credentials are
// authorized, and creating or updating objects so that every API phase can
// be run again and converge.
package apiclient
