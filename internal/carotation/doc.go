// Package carotation holds the rotation of a cluster's certificate
// authorities and service-account key (kubeadm certs rotate-ca): the new
// CAs and key staged beside the current ones, and the trust bundles that
// make every component, kubeconfig file and published ConfigMap of a node
// trust the current and the new CA (and the API server accept tokens of
// both keys) at once, before anything is signed by the new one.
//
// Every step inspects the files and the API server, and changes only what
// is not yet as wanted: run again, it changes nothing; killed half-way, the
// next run finishes it. The components that must read a changed file
// again are recorded in a file before the change and removed from it once
// seen restarted and healthy, so a restart a killed run owed is made by
// the next one.
//
// The design, the order of the steps and what is not done yet are in
// docs/decisions/011-rotating-certificate-authorities.md.
package carotation
