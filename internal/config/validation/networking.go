package validation

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

const (
	// Smallest service and pod ranges, in addresses.
	minServiceSubnetAddresses = 10
	minPodSubnetAddresses     = 14

	// Smallest prefix length (largest range) of a service subnet.
	minServiceMaskIPv4 = 12
	minServiceMaskIPv6 = 108

	// Per-node pod range sizes used by the controller manager unless its
	// node-cidr-mask-size-ipv4 / -ipv6 flags say otherwise.
	defaultNodeMaskIPv4 = 24
	defaultNodeMaskIPv6 = 64
	// A pod subnet may be split into at most 2^16 node ranges.
	maxNodeMaskDifference = 16

	nodeMaskFlagIPv4 = "node-cidr-mask-size-ipv4"
	nodeMaskFlagIPv6 = "node-cidr-mask-size-ipv6"
)

func validateNetworking(c *kubeadm.ClusterConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range k8svalidation.IsDNS1123Subdomain(c.Networking.DNSDomain) {
		errs = append(errs, field.Invalid(p.Child("dnsDomain"), c.Networking.DNSDomain, msg))
	}
	errs = append(errs, validateServiceSubnet(c.Networking.ServiceSubnet, p.Child("serviceSubnet"))...)
	if c.Networking.PodSubnet != "" {
		errs = append(errs, validatePodSubnet(c.Networking.PodSubnet, c.ControllerManager.ExtraArgs, p.Child("podSubnet"))...)
	}
	return errs
}

// parseSubnets splits a comma-separated list of CIDRs. Any malformed entry,
// including an empty one or one with spaces, fails the whole list.
func parseSubnets(s string) ([]*net.IPNet, bool) {
	var nets []*net.IPNet
	for _, part := range strings.Split(s, ",") {
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, false
		}
		nets = append(nets, n)
	}
	return nets, true
}

func isIPv4Net(n *net.IPNet) bool { return n.IP.To4() != nil }

// checkFamilies accepts one subnet, or two of different families.
func checkFamilies(s string, nets []*net.IPNet, p *field.Path) field.ErrorList {
	if len(nets) == 1 || (len(nets) == 2 && isIPv4Net(nets[0]) != isIPv4Net(nets[1])) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, s, "give a single CIDR, or two CIDRs (one IPv4, one IPv6) for dual-stack")}
}

// addressCount is the number of addresses in n, capped so it cannot overflow.
func addressCount(n *net.IPNet) uint64 {
	ones, bits := n.Mask.Size()
	host := bits - ones
	if host >= 63 {
		return 1 << 63
	}
	return 1 << uint(host)
}

func checkMinimumSize(n *net.IPNet, min uint64, p *field.Path) *field.Error {
	if count := addressCount(n); count < min {
		return field.Invalid(p, n.String(), fmt.Sprintf("the subnet holds %d address(es), fewer than the %d required", count, min))
	}
	return nil
}

func validateServiceSubnet(s string, p *field.Path) field.ErrorList {
	nets, ok := parseSubnets(s)
	if !ok {
		return field.ErrorList{field.Invalid(p, s, "not a CIDR or comma-separated list of CIDRs")}
	}
	errs := checkFamilies(s, nets, p)
	for _, n := range nets {
		if e := checkMinimumSize(n, minServiceSubnetAddresses, p); e != nil {
			errs = append(errs, e)
		}
	}
	for _, n := range nets {
		ones, bits := n.Mask.Size()
		min := minServiceMaskIPv6
		if bits == 32 {
			min = minServiceMaskIPv4
		}
		if ones < min {
			errs = append(errs, field.Invalid(p, n.String(), fmt.Sprintf("the service subnet is too large: a %d-bit prefix must be at least /%d", bits, min)))
		}
	}
	return errs
}

// nodeMaskFromArgs returns the per-node prefix length the controller manager
// will use for a family: the last non-empty value of the family's flag, or
// the default. The family-less node-cidr-mask-size flag is not considered.
func nodeMaskFromArgs(args []kubeadm.Arg, ipv4 bool) (int, error) {
	flag, mask := nodeMaskFlagIPv6, defaultNodeMaskIPv6
	if ipv4 {
		flag, mask = nodeMaskFlagIPv4, defaultNodeMaskIPv4
	}
	value := ""
	for _, a := range args {
		if a.Name == flag {
			value = a.Value
		}
	}
	if value == "" {
		return mask, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		return 0, fmt.Errorf("the kube-controller-manager flag %s is not an integer: %w", flag, err)
	}
	return n, nil
}

func validatePodSubnet(s string, controllerManagerArgs []kubeadm.Arg, p *field.Path) field.ErrorList {
	nets, ok := parseSubnets(s)
	if !ok {
		return field.ErrorList{field.Invalid(p, s, "not a CIDR or comma-separated list of CIDRs")}
	}
	errs := checkFamilies(s, nets, p)
	for _, n := range nets {
		if e := checkMinimumSize(n, minPodSubnetAddresses, p); e != nil {
			errs = append(errs, e)
		}
	}
	for _, n := range nets {
		nodeMask, err := nodeMaskFromArgs(controllerManagerArgs, isIPv4Net(n))
		if err != nil {
			errs = append(errs, field.Invalid(p, n.String(), err.Error()))
			continue
		}
		podMask, _ := n.Mask.Size()
		switch {
		case podMask > nodeMask:
			errs = append(errs, field.Invalid(p, n.String(), fmt.Sprintf("the pod subnet (/%d) is smaller than one node's range (/%d)", podMask, nodeMask)))
		case nodeMask-podMask > maxNodeMaskDifference:
			errs = append(errs, field.Invalid(p, n.String(), fmt.Sprintf("the pod subnet (/%d) would be split into more than 2^%d node ranges (/%d)", podMask, maxNodeMaskDifference, nodeMask)))
		}
	}
	return errs
}

// overlappingSubnets returns pairs "pod, service" of subnets that share
// addresses. Unparsable values are ignored (they are reported as errors).
func overlappingSubnets(podSubnet, serviceSubnet string) [][2]string {
	if podSubnet == "" || serviceSubnet == "" {
		return nil
	}
	pods, ok1 := parseSubnets(podSubnet)
	svcs, ok2 := parseSubnets(serviceSubnet)
	if !ok1 || !ok2 {
		return nil
	}
	var out [][2]string
	for _, a := range pods {
		for _, b := range svcs {
			if a.Contains(b.IP) || b.Contains(a.IP) {
				out = append(out, [2]string{a.String(), b.String()})
			}
		}
	}
	return out
}
