// Package kubedns builds the kube-dns addon, the DNS server kubeadm
// installed before CoreDNS and installs again when the CoreDNS feature gate
// is off (docs/decisions/012-kube-dns-addon.md): the ServiceAccount,
// ConfigMap and Deployment kube-dns (containers kubedns, dnsmasq and
// sidecar) and the Service kube-dns, the one CoreDNS uses too. The
// ServiceAccount's rights come from the system:kube-dns ClusterRoleBinding
// every API server keeps by itself. The objects follow what kubeadm v1.12
// created (names, ports, arguments), written for today's API.
package kubedns
