package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// Cert describes one certificate (or certificate authority) of a
// control-plane node, as kubeadm lays them out under the certificate folder.
type Cert struct {
	// Name is how phases, "certs renew" and "certs check-expiration" call
	// it: "apiserver", "etcd-server", "etcd-ca".
	Name string
	// BaseName names the files without extension, relative to the
	// certificate folder: "apiserver", "etcd/server".
	BaseName string
	// CA is the Name of the signing CA; empty for a CA.
	CA string
	// CommonName is the subject's common name; empty means the node name.
	CommonName   string
	Organization []string
	// Usages are the extended key usages of a leaf certificate.
	Usages []x509.ExtKeyUsage
	// SANs, when set, computes the subject alternative names the
	// certificate must carry.
	SANs func(cfg *kubeadm.InitConfiguration) (AltNames, error)
	// LocalEtcd marks what only kubeadm's own (local) etcd needs; with an
	// external etcd these are neither created nor checked.
	LocalEtcd bool
	// Description says what the certificate is for, in a few words.
	Description string
}

// IsCA reports whether c is a certificate authority.
func (c Cert) IsCA() bool { return c.CA == "" }

// AltNames are subject alternative names.
type AltNames struct {
	DNSNames []string
	IPs      []net.IP
}

// The CA names, as Cert.CA refers to them.
const (
	CAName           = "ca"
	FrontProxyCAName = "front-proxy-ca"
	EtcdCAName       = "etcd-ca"
)

// ServiceAccountKeyBase is the base name of the service-account signing
// key pair: sa.key and sa.pub.
const ServiceAccountKeyBase = "sa"

// CertTable returns every certificate of a control-plane node in the order
// kubeadm creates them: each CA precedes what it signs. It returns a new
// slice on each call.
func CertTable() []Cert {
	return []Cert{
		{
			Name: CAName, BaseName: "ca", CommonName: "kubernetes",
			Description: "Kubernetes cluster CA",
		},
		{
			Name: "apiserver", BaseName: "apiserver", CA: CAName, CommonName: "kube-apiserver",
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			SANs:        APIServerSANs,
			Description: "serving certificate of the Kubernetes API server",
		},
		{
			Name: "apiserver-kubelet-client", BaseName: "apiserver-kubelet-client", CA: CAName,
			CommonName:  "kube-apiserver-kubelet-client",
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			Description: "client certificate the API server uses to reach the kubelets",
		},
		{
			Name: FrontProxyCAName, BaseName: "front-proxy-ca", CommonName: "front-proxy-ca",
			Description: "front proxy CA",
		},
		{
			Name: "front-proxy-client", BaseName: "front-proxy-client", CA: FrontProxyCAName,
			CommonName:  "front-proxy-client",
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			Description: "client certificate of the front proxy",
		},
		{
			Name: EtcdCAName, BaseName: "etcd/ca", CommonName: "etcd-ca", LocalEtcd: true,
			Description: "etcd CA",
		},
		{
			Name: "etcd-server", BaseName: "etcd/server", CA: EtcdCAName,
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			SANs:        EtcdServerSANs,
			LocalEtcd:   true,
			Description: "serving certificate of etcd",
		},
		{
			Name: "etcd-peer", BaseName: "etcd/peer", CA: EtcdCAName,
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			SANs:        EtcdPeerSANs,
			LocalEtcd:   true,
			Description: "certificate etcd members talk to each other with",
		},
		{
			Name: "etcd-healthcheck-client", BaseName: "etcd/healthcheck-client", CA: EtcdCAName,
			CommonName:  "kube-etcd-healthcheck-client",
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			LocalEtcd:   true,
			Description: "client certificate of etcd's liveness probe",
		},
		{
			Name: "apiserver-etcd-client", BaseName: "apiserver-etcd-client", CA: EtcdCAName,
			CommonName:  "kube-apiserver-etcd-client",
			Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			LocalEtcd:   true,
			Description: "client certificate the API server uses to reach etcd",
		},
	}
}

// Certificates returns the certificates cfg needs, in creation order: the
// whole table, less the local etcd ones when etcd is external.
func Certificates(cfg *kubeadm.ClusterConfiguration) []Cert {
	all := CertTable()
	if !ExternalEtcd(cfg) {
		return all
	}
	out := all[:0]
	for _, c := range all {
		if !c.LocalEtcd {
			out = append(out, c)
		}
	}
	return out
}

// ExternalEtcd reports whether cfg uses an etcd cluster kubeadm does not run.
func ExternalEtcd(cfg *kubeadm.ClusterConfiguration) bool { return cfg.Etcd.External != nil }

// LookupCert finds a certificate of the table by name.
func LookupCert(name string) (Cert, bool) {
	for _, c := range CertTable() {
		if c.Name == name {
			return c, true
		}
	}
	return Cert{}, false
}

// Spec is what a certificate made for cfg holds: subject, names, usages
// and lifetime.
func (c Cert) Spec(cfg *kubeadm.InitConfiguration) (CertSpec, error) {
	spec := CertSpec{
		CommonName:   c.CommonName,
		Organization: c.Organization,
		Usages:       c.Usages,
		IsCA:         c.IsCA(),
		Validity:     CertificateValidity(&cfg.ClusterConfiguration),
	}
	if c.IsCA() {
		spec.Validity = CAValidity(&cfg.ClusterConfiguration)
	}
	if spec.CommonName == "" {
		spec.CommonName = cfg.NodeRegistration.Name
	}
	if c.SANs != nil {
		alt, err := c.SANs(cfg)
		if err != nil {
			return CertSpec{}, fmt.Errorf("subject alternative names of %s: %w", c.BaseName, err)
		}
		spec.DNSNames, spec.IPs = alt.DNSNames, alt.IPs
	}
	return spec, nil
}

// CertificateValidity is the lifetime of leaf certificates under cfg.
func CertificateValidity(cfg *kubeadm.ClusterConfiguration) time.Duration {
	if cfg.CertificateValidityPeriod != nil {
		return cfg.CertificateValidityPeriod.Duration
	}
	return v1beta4.DefaultCertificateValidityPeriod
}

// CAValidity is the lifetime of CA certificates under cfg.
func CAValidity(cfg *kubeadm.ClusterConfiguration) time.Duration {
	if cfg.CACertificateValidityPeriod != nil {
		return cfg.CACertificateValidityPeriod.Duration
	}
	return v1beta4.DefaultCACertificateValidityPeriod
}

// sanBuilder collects names the way kubeadm lays them out: DNS names in
// lower case, without duplicates, sorted; IP addresses without duplicates,
// in the order they were first given.
type sanBuilder struct {
	dns map[string]bool
	ips []net.IP
}

func (b *sanBuilder) addDNS(names ...string) {
	if b.dns == nil {
		b.dns = map[string]bool{}
	}
	for _, n := range names {
		if n != "" {
			b.dns[strings.ToLower(n)] = true
		}
	}
}

func (b *sanBuilder) addIP(ips ...net.IP) {
	for _, ip := range ips {
		if ip == nil {
			continue
		}
		dup := false
		for _, have := range b.ips {
			if have.Equal(ip) {
				dup = true
				break
			}
		}
		if !dup {
			b.ips = append(b.ips, ip)
		}
	}
}

// add files each entry as an IP address or a DNS name.
func (b *sanBuilder) add(entries ...string) {
	for _, e := range entries {
		if ip := net.ParseIP(e); ip != nil {
			b.addIP(ip)
		} else {
			b.addDNS(e)
		}
	}
}

func (b *sanBuilder) result() AltNames {
	alt := AltNames{IPs: b.ips}
	for n := range b.dns {
		alt.DNSNames = append(alt.DNSNames, n)
	}
	sort.Strings(alt.DNSNames)
	return alt
}

// advertiseIP is the advertise address that package config parsed.
func advertiseIP(cfg *kubeadm.InitConfiguration) (net.IP, error) {
	if !cfg.AdvertiseIP.IsValid() {
		return nil, fmt.Errorf("the advertise address %q is not an IP address", cfg.LocalAPIEndpoint.AdvertiseAddress)
	}
	return net.IP(cfg.AdvertiseIP.AsSlice()), nil
}

// APIServerSANs are the names of the API server's serving certificate:
// the node name, the in-cluster names of the "kubernetes" Service, its
// address (the first of the first service subnet; a dual-stack cluster
// gets only that one), the advertise address, the control-plane endpoint's
// host and apiServer.certSANs.
func APIServerSANs(cfg *kubeadm.InitConfiguration) (AltNames, error) {
	svcIP, err := config.APIServerServiceIP(cfg.Subnets.Service)
	if err != nil {
		return AltNames{}, fmt.Errorf("the service subnet %q: %w", cfg.Networking.ServiceSubnet, err)
	}
	adv, err := advertiseIP(cfg)
	if err != nil {
		return AltNames{}, err
	}
	var b sanBuilder
	b.addDNS(cfg.NodeRegistration.Name,
		"kubernetes",
		"kubernetes.default",
		"kubernetes.default.svc",
		"kubernetes.default.svc."+cfg.Networking.DNSDomain)
	b.addIP(net.IP(svcIP.AsSlice()), adv)
	if ep := cfg.Endpoint; ep.IsIP() {
		b.addIP(net.IP(ep.Addr.AsSlice()))
	} else {
		b.addDNS(ep.Host)
	}
	b.add(cfg.APIServer.CertSANs...)
	return b.result(), nil
}

// EtcdServerSANs are the names of etcd's serving certificate: the node
// name, localhost, the advertise address, the loopback addresses and
// etcd.local.serverCertSANs.
func EtcdServerSANs(cfg *kubeadm.InitConfiguration) (AltNames, error) {
	var extra []string
	if cfg.Etcd.Local != nil {
		extra = cfg.Etcd.Local.ServerCertSANs
	}
	return etcdSANs(cfg, extra)
}

// EtcdPeerSANs are the names of etcd's peer certificate: as for the
// serving certificate, with etcd.local.peerCertSANs.
func EtcdPeerSANs(cfg *kubeadm.InitConfiguration) (AltNames, error) {
	var extra []string
	if cfg.Etcd.Local != nil {
		extra = cfg.Etcd.Local.PeerCertSANs
	}
	return etcdSANs(cfg, extra)
}

func etcdSANs(cfg *kubeadm.InitConfiguration, extra []string) (AltNames, error) {
	adv, err := advertiseIP(cfg)
	if err != nil {
		return AltNames{}, err
	}
	var b sanBuilder
	b.addDNS(cfg.NodeRegistration.Name, "localhost")
	b.addIP(adv, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	b.add(extra...)
	return b.result(), nil
}

// APIServerURL is the address clients use to reach the API server:
// "https://host:port" from the control-plane endpoint when one is set and
// local is false, from the node's own advertise address and bind port
// otherwise. An endpoint without a port (or with an empty one) gets the
// bind port.
func APIServerURL(cfg *kubeadm.InitConfiguration, local bool) (string, error) {
	port := strconv.Itoa(int(cfg.LocalAPIEndpoint.BindPort))
	if cfg.LocalAPIEndpoint.BindPort == 0 {
		port = strconv.Itoa(v1beta4.DefaultAPIBindPort)
	}
	if ep := cfg.Endpoint; !local && cfg.ControlPlaneEndpoint != "" {
		p := ep.Port
		if p == "" {
			p = port
		}
		return "https://" + net.JoinHostPort(ep.Host, p), nil
	}
	adv, err := advertiseIP(cfg)
	if err != nil {
		return "", err
	}
	return "https://" + net.JoinHostPort(adv.String(), port), nil
}
