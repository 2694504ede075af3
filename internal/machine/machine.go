package machine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
)

// Known CRI sockets, in the order kubeadm prefers them.
var knownCRISockets = []struct{ path, endpoint string }{
	{"/var/run/containerd/containerd.sock", "unix:///var/run/containerd/containerd.sock"},
	{"/var/run/crio/crio.sock", "unix:///var/run/crio/crio.sock"},
	{"/var/run/cri-dockerd.sock", "unix:///var/run/cri-dockerd.sock"},
}

// DefaultCRISocket is used when no runtime socket is found.
const DefaultCRISocket = "unix:///var/run/containerd/containerd.sock"

// DetectCRISocket returns the endpoint of the one container runtime socket
// present under root ("" or "/" for the real root). With none it returns
// the containerd default; with several it fails and names them, since
// guessing would pick a runtime the user did not mean.
func DetectCRISocket(root string) (string, error) {
	var found []string
	for _, s := range knownCRISockets {
		fi, err := os.Stat(root + s.path)
		if err == nil && fi.Mode()&os.ModeSocket != 0 {
			found = append(found, s.endpoint)
		}
	}
	switch len(found) {
	case 0:
		return DefaultCRISocket, nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("found several container runtime sockets on this host (%s); choose one with the criSocket field or --cri-socket", strings.Join(found, ", "))
}

// Hostname returns the machine's host name in lower case.
func Hostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}

// DefaultRouteAddress returns the first global unicast address of the
// interface that holds the IPv4 default route, else of the IPv6 default
// route. It asks the kernel over netlink, and falls back to reading
// routeFile and ipv6RouteFile (usually /proc/net/route and
// /proc/net/ipv6_route).
func DefaultRouteAddress(routeFile, ipv6RouteFile string) (net.IP, error) {
	var errs []error
	// The kernel's own answer first: it works inside a --rootfs chroot.
	for _, fam := range []struct {
		family int
		want4  bool
	}{{syscall.AF_INET, true}, {syscall.AF_INET6, false}} {
		iface, err := defaultRouteInterfaceNetlink(fam.family)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ip, err := globalAddress(iface.Name, fam.want4); err == nil {
			return ip, nil
		} else {
			errs = append(errs, err)
		}
	}
	if ifname, err := defaultRouteInterface(routeFile, false); err == nil {
		if ip, err := globalAddress(ifname, true); err == nil {
			return ip, nil
		} else {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, err)
	}
	if ifname, err := defaultRouteInterface(ipv6RouteFile, true); err == nil {
		if ip, err := globalAddress(ifname, false); err == nil {
			return ip, nil
		} else {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no usable address on a default-route interface: %w", errors.Join(errs...))
}

func defaultRouteInterface(file string, ipv6 bool) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if ipv6 {
			// dest destlen src srclen nexthop metric refcnt use flags ifname
			if len(fields) >= 10 && fields[0] == strings.Repeat("0", 32) && fields[1] == "00" && fields[9] != "lo" {
				return fields[9], nil
			}
			continue
		}
		// Iface Destination Gateway Flags ...
		if len(fields) >= 3 && fields[1] == "00000000" && fields[0] != "Iface" {
			return fields[0], nil
		}
	}
	if ipv6 {
		return "", errors.New("no IPv6 default route")
	}
	return "", errors.New("no IPv4 default route")
}

func globalAddress(ifname string, want4 bool) (net.IP, error) {
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || !ipnet.IP.IsGlobalUnicast() {
			continue
		}
		if (ipnet.IP.To4() != nil) == want4 {
			return ipnet.IP, nil
		}
	}
	return nil, fmt.Errorf("interface %s has no global unicast address", ifname)
}
