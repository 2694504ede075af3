// Package clusterdns makes one DNS addon, CoreDNS or kube-dns, the
// cluster's, and moves a running cluster from one to the other without a
// DNS outage: both sit behind the same kube-dns Service, whose address
// every Pod's resolv.conf names, so the Service and its cluster IP stay
// while the Pods behind it change (docs/decisions/012-kube-dns-addon.md).
package clusterdns
