// Package kubeclient is kubeadm's client of the Kubernetes API: the kinds
// of object kubeadm reads and writes, with client-go's method shapes
// (c.CoreV1().ConfigMaps(ns).Get(ctx, name, opts)), over client-go's REST
// client.
//
// client-go's typed clientset, which this replaces, registers every API
// group Kubernetes serves (55 of them, and their apply configurations)
// while the process starts: on the 2-core test machine a bare program
// linking it starts in ~30 ms against ~17 ms for one linking the REST
// client and the groups kubeadm uses, with half the page faults. Every
// kubeadm command paid that, also those that never talk to a cluster.
// Here the groups kubeadm uses are registered when a client is made.
//
// Each kind offers the methods of Resource, which client-go's typed
// clients have with the same signatures, so package kubeclienttest can
// hand client-go's fake clientset to unit tests; that package is for
// tests only and stays out of the binary.
//
// An API error whose answer carried no message of its own (a 403 with an
// empty body from a proxy, a bare Status, a plain "Unauthorized") gets one
// naming the request, the identity the client authenticates as (never a
// secret) and, for bootstrap tokens and anonymous clients, the likely
// cause; its status stays, so apierrors.IsForbidden and the like still
// answer.
package kubeclient
