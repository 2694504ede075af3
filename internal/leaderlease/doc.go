// Package leaderlease knows the Lease each leader-electing control-plane
// component (kube-controller-manager, kube-scheduler) competes for, as its
// command line names it, and waits until a restarted component leads
// again.
//
// A component restarted on a node finds its Lease held by the identity of
// its previous process and, as client-go's leader election does, waits a
// whole lease duration before it takes over: until then no controller
// runs, or no Pod is scheduled. Whatever restarts such a component (an
// upgrade or its rollback, a certificate renewal, a CA rotation) waits
// here before it goes on, so that the next restart never begins while the
// cluster has no leader, and it ends with one.
package leaderlease
