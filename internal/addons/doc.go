// Package addons holds what the addons (its sub-packages: CoreDNS,
// kube-dns, kube-proxy, and clusterdns, which chooses and switches the DNS
// addon) share: how their objects are printed, and which replica count a
// DNS Deployment keeps.
package addons
