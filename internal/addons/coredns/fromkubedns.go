package coredns

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The kube-dns addon's ConfigMap and the two keys of it that kubedns and
// its dnsmasq nanny read.
const (
	KubeDNSName            = "kube-dns" // Deployment and ConfigMap
	stubDomainsKey         = "stubDomains"
	upstreamNameserversKey = "upstreamNameservers"
	defaultForwardTarget   = "forward . /etc/resolv.conf"
)

// FromKubeDNS returns the Corefile for dnsDomain that does what the
// kube-dns ConfigMap data says: each of its stubDomains (a JSON object of
// domain to name servers) becomes a server block forwarding that domain
// to its servers, and its upstreamNameservers (a JSON list) replace the
// node's resolvers for every other name, as kubeadm did when it moved a
// cluster from kube-dns to CoreDNS. ok is false when data sets neither:
// the default Corefile is right then. A value that does not parse, a
// domain that is not a DNS name or a server that is not an IP address
// (with an optional port) is an error naming the key: nothing of it can
// reach the Corefile unchecked.
func FromKubeDNS(dnsDomain string, data map[string]string) (corefile string, ok bool, err error) {
	var stubs map[string][]string
	if s := strings.TrimSpace(data[stubDomainsKey]); s != "" {
		if err := json.Unmarshal([]byte(s), &stubs); err != nil {
			return "", false, fmt.Errorf("ConfigMap %s/%s, key %s: %w", Namespace, KubeDNSName, stubDomainsKey, err)
		}
	}
	var upstreams []string
	if s := strings.TrimSpace(data[upstreamNameserversKey]); s != "" {
		if err := json.Unmarshal([]byte(s), &upstreams); err != nil {
			return "", false, fmt.Errorf("ConfigMap %s/%s, key %s: %w", Namespace, KubeDNSName, upstreamNameserversKey, err)
		}
	}
	if len(stubs) == 0 && len(upstreams) == 0 {
		return "", false, nil
	}
	for i, s := range upstreams {
		if err := checkNameServer(s); err != nil {
			return "", false, fmt.Errorf("ConfigMap %s/%s, key %s[%d]: %w", Namespace, KubeDNSName, upstreamNameserversKey, i, err)
		}
	}
	domains := make([]string, 0, len(stubs))
	for d, servers := range stubs {
		where := fmt.Sprintf("ConfigMap %s/%s, key %s, domain %q", Namespace, KubeDNSName, stubDomainsKey, d)
		if errs := validation.IsDNS1123Subdomain(strings.TrimSuffix(d, ".")); len(errs) > 0 {
			return "", false, fmt.Errorf("%s: not a DNS name: %s", where, strings.Join(errs, "; "))
		}
		if len(servers) == 0 {
			return "", false, fmt.Errorf("%s: no name server", where)
		}
		for _, s := range servers {
			if err := checkNameServer(s); err != nil {
				return "", false, fmt.Errorf("%s: %w", where, err)
			}
		}
		domains = append(domains, d)
	}
	sort.Strings(domains)

	corefile = Corefile(dnsDomain)
	if len(upstreams) > 0 {
		corefile = strings.Replace(corefile, defaultForwardTarget, "forward . "+strings.Join(upstreams, " "), 1)
	}
	var b strings.Builder
	b.WriteString(corefile)
	for _, d := range domains {
		fmt.Fprintf(&b, "%s:53 {\n    errors\n    cache 30\n    loop\n    forward . %s\n}\n", strings.TrimSuffix(d, "."), strings.Join(stubs[d], " "))
	}
	return b.String(), true, nil
}

// checkNameServer accepts what kube-dns accepts for a name server: an IP
// address, with a port or without.
func checkNameServer(s string) error {
	if _, err := netip.ParseAddr(s); err == nil {
		return nil
	}
	if _, err := netip.ParseAddrPort(s); err == nil {
		return nil
	}
	return fmt.Errorf("%q is not an IP address or IP address and port", s)
}
