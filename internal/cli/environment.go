package cli

import (
	"context"
	"io"
	"net"

	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/machine"
	"github.com/kubeadm-go/kubeadm/internal/version"
)

// hostEnvironment wires the dynamic defaults to the real machine. Warnings
// go to errOut in klog's warning shape so they stand apart from output.
func hostEnvironment(errOut io.Writer) config.Environment {
	warn := func(format string, args ...any) {
		klog.Warningf(format, args...)
	}
	_ = errOut
	resolver := version.Resolver{Warn: warn, Info: func(format string, args ...any) { klog.Infof(format, args...) }}
	return config.Environment{
		Hostname: machine.Hostname,
		DefaultAddress: func() (net.IP, error) {
			return machine.DefaultRouteAddress("/proc/net/route", "/proc/net/ipv6_route")
		},
		CRISocket: func() (string, error) { return machine.DetectCRISocket("") },
		ResolveVersion: func(ctx context.Context, v string) (string, error) {
			return resolver.Resolve(ctx, v)
		},
		NewToken: config.GenerateToken,
		Warn:     warn,
	}
}
