package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/config"
)

// Requirements of a control-plane node.
const (
	// ControlPlaneCPUs is the fewest CPUs a control-plane node may have.
	ControlPlaneCPUs = 2
	// ControlPlaneMemoryMB is the least RAM, in MiB, a control-plane node
	// may have.
	ControlPlaneMemoryMB = 1700
)

// pathName turns a path into the part of a check name upstream kubeadm
// derives from it: "/etc/kubernetes/x.yaml" becomes "-etc-kubernetes-x.yaml".
func pathName(path string) string { return strings.ReplaceAll(path, "/", "-") }

// IsPrivilegedUser fails unless kubeadm runs as root.
func IsPrivilegedUser(h Host) Check {
	return Check{Name: "IsPrivilegedUser", Run: func(context.Context) Result {
		if uid := h.EffectiveUID(); uid != 0 {
			return fail("kubeadm needs root privileges, but runs with the effective user ID %d", uid)
		}
		return Result{}
	}}
}

// NumCPU fails when fewer than min CPUs are available.
func NumCPU(h Host, min int) Check {
	return Check{Name: "NumCPU", Run: func(context.Context) Result {
		if n := h.NumCPU(); n < min {
			return fail("only %d CPU(s) are available; a control-plane node needs at least %d", n, min)
		}
		return Result{}
	}}
}

// Mem fails when the machine has less than minMB MiB of RAM.
func Mem(h Host, minMB uint64) Check {
	return Check{Name: "Mem", Run: func(context.Context) Result {
		total, err := h.TotalMemory()
		if err != nil {
			return Result{Errors: []error{err}}
		}
		if mb := total / 1024 / 1024; mb < minMB {
			return fail("the machine has %d MB of RAM; a control-plane node needs at least %d MB", mb, minMB)
		}
		return Result{}
	}}
}

// Port fails when the TCP port is taken.
func Port(h Host, port int) Check {
	return Check{Name: fmt.Sprintf("Port-%d", port), Run: func(context.Context) Result {
		if err := h.ListenTCP(port); err != nil {
			return fail("Port %d is in use", port)
		}
		return Result{}
	}}
}

// FileAvailable fails when path exists.
func FileAvailable(h Host, path string) Check {
	return Check{Name: "FileAvailable-" + pathName(path), Run: func(context.Context) Result {
		if _, err := h.Stat(path); err == nil {
			return fail("%s already exists", path)
		}
		return Result{}
	}}
}

// FileExisting fails when path does not exist.
func FileExisting(h Host, path string) Check {
	return Check{Name: "FileExisting-" + pathName(path), Run: func(context.Context) Result {
		if _, err := h.Stat(path); err != nil {
			return fail("%s does not exist", path)
		}
		return Result{}
	}}
}

// DirAvailable fails when path is a folder that is not empty. A missing
// folder passes.
func DirAvailable(h Host, path string) Check {
	return Check{Name: "DirAvailable-" + pathName(path), Run: func(context.Context) Result {
		entries, err := h.ReadDir(path)
		if errors.Is(err, fs.ErrNotExist) {
			return Result{}
		}
		if err != nil {
			return fail("cannot read the folder %s: %v", path, err)
		}
		if len(entries) > 0 {
			return fail("%s is not empty", path)
		}
		return Result{}
	}}
}

// FileContent fails unless the file at path holds content (surrounding
// white space aside), as for a sysctl under /proc/sys.
func FileContent(h Host, path, content string) Check {
	return Check{Name: "FileContent-" + pathName(path), Run: func(context.Context) Result {
		b, err := h.ReadFile(path)
		if err != nil {
			return fail("cannot read %s: %v", path, err)
		}
		if strings.TrimSpace(string(b)) != content {
			return fail("%s is not set to %s", path, content)
		}
		return Result{}
	}}
}

// InPath fails when the executable is not in the PATH.
func InPath(h Host, executable string) Check {
	return Check{Name: "FileExisting-" + executable, Run: func(context.Context) Result {
		if _, err := h.LookPath(executable); err != nil {
			return fail("%s was not found in the system path", executable)
		}
		return Result{}
	}}
}

// Swap warns when swap space is on.
func Swap(h Host) Check {
	return Check{Name: "Swap", Run: func(context.Context) Result {
		b, err := h.ReadFile("/proc/swaps")
		if err != nil {
			return Result{} // no /proc/swaps: nothing to tell
		}
		var lines int
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) != "" {
				lines++
			}
		}
		if lines > 1 { // the first line is the header
			return warn("swap is on; the kubelet supports swap only on cgroup v2 and when configured for it " +
				"(see https://kubernetes.io/docs/concepts/architecture/nodes/#swap-memory), otherwise turn swap off")
		}
		return Result{}
	}}
}

// Hostname warns when the node name does not resolve.
func Hostname(h Host, nodeName string) Check {
	return Check{Name: "Hostname", Run: func(ctx context.Context) Result {
		addrs, err := h.LookupHost(ctx, nodeName)
		if err == nil && len(addrs) > 0 {
			return Result{}
		}
		if err == nil {
			err = errors.New("no addresses")
		}
		return Result{Warnings: []error{
			fmt.Errorf("the node name %q cannot be reached", nodeName),
			fmt.Errorf("looking up the node name %q: %v", nodeName, err),
		}}
	}}
}

// hostURL builds "https://ip" ("https://" for an address that is not
// valid).
func hostURL(ip netip.Addr) *url.URL {
	host := ""
	switch {
	case ip.Is6():
		host = "[" + ip.String() + "]"
	case ip.IsValid():
		host = ip.String()
	}
	return &url.URL{Scheme: "https", Host: host}
}

// HTTPProxy warns when HTTPS requests to the API server's address would go
// through a proxy.
func HTTPProxy(h Host, address netip.Addr) Check {
	return Check{Name: "HTTPProxy", Run: func(context.Context) Result {
		u := hostURL(address)
		p, err := h.Proxy(u)
		if err != nil {
			return warn("cannot tell whether connections to %q use a proxy: %v", u, err)
		}
		if p != nil {
			return warn("connections to %q would go through the proxy %q; if that is not intended, adjust your proxy settings (NO_PROXY)", u, p)
		}
		return Result{}
	}}
}

// HTTPProxyCIDR warns when HTTPS requests to the first address of cidr (a
// Service or Pod range) would go through a proxy.
func HTTPProxyCIDR(h Host, cidr netip.Prefix) Check {
	return Check{Name: "HTTPProxyCIDR", Run: func(context.Context) Result {
		ip, err := config.NthAddress(cidr, 1)
		if err != nil {
			return fail("%v", err)
		}
		p, err := h.Proxy(hostURL(ip))
		if err != nil {
			return warn("cannot tell whether connections to %q use a proxy: %v", cidr, err)
		}
		if p != nil {
			return warn("connections to %q would go through the proxy %q, which can break the cluster; list the Pod and Service ranges in NO_PROXY", cidr, p)
		}
		return Result{}
	}}
}

// noInitSystem is the warning of service checks on a machine without systemd.
const noInitSystem = "found no supported init system (systemd), so services are not checked"

// isActiveState tells whether a systemd ActiveState means the unit runs.
func isActiveState(s string) bool {
	switch s {
	case "active", "activating", "reloading":
		return true
	}
	return false
}

// Firewalld warns when firewalld runs, naming the ports that must be open.
func Firewalld(h Host, ports []int) Check {
	return Check{Name: "Firewalld", Run: func(ctx context.Context) Result {
		if _, err := h.LookPath("systemctl"); err != nil {
			return warn(noInitSystem)
		}
		out, _ := h.Command(ctx, "systemctl", "is-active", "firewalld")
		if isActiveState(strings.TrimSpace(string(out))) {
			return warn("firewalld is active; make sure the ports %v are open, or the cluster may not work", ports)
		}
		return Result{}
	}}
}

// ServiceEnabled warns when the systemd service is not enabled.
func ServiceEnabled(h Host, service string) Check {
	return Check{Name: "Service-" + service, Run: func(ctx context.Context) Result {
		if _, err := h.LookPath("systemctl"); err != nil {
			return warn(noInitSystem)
		}
		if _, err := h.Command(ctx, "systemctl", "is-enabled", service); err != nil {
			return warn("the %s service is not enabled; run 'systemctl enable %s.service'", service, service)
		}
		return Result{}
	}}
}
