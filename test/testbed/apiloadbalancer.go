package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
)

// apiLBName is the hub process of the API server load balancer.
const apiLBName = "api-loadbalancer"

// APILoadBalancerAddr is where the cluster's API server load balancer
// listens: the hub's bridge address, port 6443, which every node reaches.
var APILoadBalancerAddr = netip.AddrPortFrom(gatewayAddr, 6443)

// ServeAPILoadBalancer starts, in the hub, the load balancer a highly
// available cluster's controlPlaneEndpoint names, as kubeadm's guide to
// such clusters asks for (kube-vip, HAProxy or a cloud's): a TCP forwarder
// to the API servers at upstreams that answer /readyz. Without it the
// cluster's endpoint is the first node's API server, and every node loses
// the cluster whenever that one restarts. It listens at
// APILoadBalancerAddr until Down; a running one is left as it is.
func (c *Cluster) ServeAPILoadBalancer(ctx context.Context, upstreams []netip.AddrPort) error {
	args := []string{APILoadBalancerAddr.String()}
	for _, u := range upstreams {
		args = append(args, u.String())
	}
	return c.startHubProcess(ctx, apiLBName, args)
}

// RunAPILoadBalancer listens on addr, writes "ready" and a newline to
// ready (when not nil) and forwards connections to the healthy upstreams
// until SIGTERM: the "testbed api-loadbalancer" command, run in a
// cluster's hub. It is our node-local balancer's forwarder (internal/apilb);
// its probes ask /readyz without checking the API servers' certificates,
// as a TCP load balancer's health checks do.
func RunAPILoadBalancer(addr string, upstreams []string, ready io.WriteCloser, log io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := apilb.New(apilb.Config{
		Probe: apilb.ReadyzProber(&tls.Config{InsecureSkipVerify: true}, nil), //nolint:gosec // a health check, as a TCP load balancer's
		OnChange: func(addr string, healthy bool) {
			fmt.Fprintf(log, "%s healthy: %v\n", addr, healthy)
		},
	})
	b.SetUpstreams(upstreams)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("api-loadbalancer: %w", err)
	}
	if ready != nil {
		fmt.Fprintln(ready, "ready")
		ready.Close()
	}
	return b.Serve(ctx, ln)
}
