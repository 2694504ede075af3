package csrapprover

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// Identities a kubelet's serving certificate request carries.
const (
	// SignerName is the signer of kubelet serving certificates.
	SignerName = certificatesv1.KubeletServingSignerName
	// NodeUserPrefix starts the user name of a node's credentials.
	NodeUserPrefix = "system:node:"
	// NodesGroup is the group of every node's credentials.
	NodesGroup = "system:nodes"
)

// Decided reports whether csr was approved, denied or failed already.
func Decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return false
}

// Ours reports whether csr is a request this approver decides on: for
// the kubelet serving signer and not decided yet.
func Ours(csr *certificatesv1.CertificateSigningRequest) bool {
	return csr.Spec.SignerName == SignerName && !Decided(csr)
}

// NodeName is the node whose credentials made csr, "" when a user that is
// not a node made it.
func NodeName(csr *certificatesv1.CertificateSigningRequest) string {
	name, ok := strings.CutPrefix(csr.Spec.Username, NodeUserPrefix)
	if !ok {
		return ""
	}
	return name
}

// Check returns nil when csr is a kubelet serving certificate request that
// the node of its requester may have made, else an error saying what is
// wrong. nodes are the cluster's Nodes:
//
//   - the signer is kubernetes.io/kubelet-serving;
//   - the requester is a node ("system:node:<name>" in the group
//     "system:nodes") and nodes hold that Node;
//   - the request is a well-formed, self-signed PKCS#10 request whose
//     subject is exactly the common name "system:node:<name>" and the
//     organization "system:nodes";
//   - the usages are server auth and digital signature, with key
//     encipherment allowed, and nothing else;
//   - it names at least one DNS name or IP address, and each is one of the
//     Node's addresses (host names and DNS names, internal and external
//     IPs) and none of any other Node's: a node writes its own Node's
//     addresses, so one could list another node's address as its own,
//     but not take one another Node already lists; no e-mail address or
//     URI.
func Check(csr *certificatesv1.CertificateSigningRequest, nodes []corev1.Node) error {
	if csr.Spec.SignerName != SignerName {
		return fmt.Errorf("the signer is %q, not %q", csr.Spec.SignerName, SignerName)
	}
	name := NodeName(csr)
	if name == "" {
		return fmt.Errorf("the requester %q is not a node", csr.Spec.Username)
	}
	if !slices.Contains(csr.Spec.Groups, NodesGroup) {
		return fmt.Errorf("the requester %q is not in the group %q", csr.Spec.Username, NodesGroup)
	}
	i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == name })
	if i < 0 {
		return fmt.Errorf("no Node %q is known", name)
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return err
	}
	if err := checkSubject(req, csr.Spec.Username); err != nil {
		return err
	}
	if err := checkUsages(csr.Spec.Usages); err != nil {
		return err
	}
	return checkNames(req, nodes, i)
}

// parseRequest decodes the PEM request and checks its signature.
func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("the request is not a PEM \"CERTIFICATE REQUEST\"")
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return nil, errors.New("the request has data after its PEM block")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the request does not parse: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the request's signature does not verify: %w", err)
	}
	return req, nil
}

// checkSubject wants the common name user and the one organization
// "system:nodes", and nothing else in the subject.
func checkSubject(req *x509.CertificateRequest, user string) error {
	s := req.Subject
	if s.CommonName != user {
		return fmt.Errorf("the subject's common name is %q, not the requester %q", s.CommonName, user)
	}
	if !slices.Equal(s.Organization, []string{NodesGroup}) {
		return fmt.Errorf("the subject's organizations are %q, not [%q]", s.Organization, NodesGroup)
	}
	if len(s.Country)+len(s.OrganizationalUnit)+len(s.Locality)+len(s.Province)+len(s.StreetAddress)+len(s.PostalCode) > 0 || s.SerialNumber != "" || len(s.ExtraNames) > 0 {
		return fmt.Errorf("the subject %q holds more than a common name and an organization", s.String())
	}
	return nil
}

// checkUsages wants server auth and digital signature, and allows key
// encipherment (which RSA keys ask for).
func checkUsages(usages []certificatesv1.KeyUsage) error {
	allowed := []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment}
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return fmt.Errorf("the usage %q is not one of a serving certificate", u)
		}
	}
	for _, u := range []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature} {
		if !slices.Contains(usages, u) {
			return fmt.Errorf("the usages %q lack %q", usages, u)
		}
	}
	return nil
}

// checkNames wants every subject alternative name among the addresses of
// nodes[own], and none among another Node's.
func checkNames(req *x509.CertificateRequest, nodes []corev1.Node, own int) error {
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("the request names e-mail addresses or URIs")
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return errors.New("the request names no DNS name or IP address")
	}
	node := &nodes[own]
	names, ips := addresses(node)
	for _, n := range req.DNSNames {
		if !slices.Contains(names, strings.ToLower(n)) {
			return fmt.Errorf("the DNS name %q is not an address of Node %q", n, node.Name)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.Contains(ips, ip.String()) {
			return fmt.Errorf("the IP address %s is not an address of Node %q", ip, node.Name)
		}
	}
	for i := range nodes {
		if i == own {
			continue
		}
		names, ips := addresses(&nodes[i])
		for _, n := range req.DNSNames {
			if slices.Contains(names, strings.ToLower(n)) {
				return fmt.Errorf("the DNS name %q is also an address of Node %q", n, nodes[i].Name)
			}
		}
		for _, ip := range req.IPAddresses {
			if slices.Contains(ips, ip.String()) {
				return fmt.Errorf("the IP address %s is also an address of Node %q", ip, nodes[i].Name)
			}
		}
	}
	return nil
}

// addresses returns node's names (host names and DNS names, lower case)
// and IP addresses (internal and external, in net.IP's form).
func addresses(node *corev1.Node) (names, ips []string) {
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, strings.ToLower(a.Address))
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(a.Address); ip != nil {
				ips = append(ips, ip.String())
			}
		}
	}
	return names, ips
}
