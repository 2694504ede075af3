package integration

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// testAPIServerLB runs the node-local load balancer (NodeLocalAPILoadBalancer)
// against the real API server, with a node's credentials as a kubelet has
// them: it probes /readyz over TLS against the cluster CA, learns the API
// server from the `kubernetes` EndpointSlice through itself (the Role that
// init makes lets the group system:nodes do so), drops from its saved list
// an address the cluster does not list, and forwards a client's TLS, client
// certificate included, untouched.
func testAPIServerLB(t *testing.T, cp *controlplane.ControlPlane) {
	ctx := testContext(t, 90*time.Second)
	if err := apilb.EnsureRBAC(ctx, cp.Client()); err != nil {
		t.Fatalf("EnsureRBAC: %v", err)
	}
	if err := apilb.EnsureRBAC(ctx, cp.Client()); err != nil {
		t.Fatalf("EnsureRBAC again: %v", err)
	}

	dir := t.TempDir()
	ca, err := kubeconfig.LoadCAWithKey(cp.HostPath("/etc/kubernetes/pki"))
	if err != nil {
		t.Fatal(err)
	}
	is := kubeconfig.Issuer{CA: ca, Validity: time.Hour, Algorithm: v1beta4.EncryptionAlgorithmECDSAP256}
	nodeConf, err := is.Config(kubeconfig.Spec{
		ClusterName: "kubernetes", Server: cp.Endpoint(),
		ClientName: "system:node:lb-node", Organizations: []string{"system:nodes"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeletConf := filepath.Join(dir, "kubelet.conf")
	if err := kubeconfig.WriteFile(kubeletConf, nodeConf); err != nil {
		t.Fatal(err)
	}

	real := net.JoinHostPort(cp.AdvertiseAddress().String(), "6443")
	gone := net.JoinHostPort(netip.MustParseAddr("192.0.2.254").String(), "6443") // a former API server
	upstreams := filepath.Join(dir, apilb.StateDir, apilb.UpstreamsFile)
	if err := apilb.WriteUpstreams(upstreams, []string{real, gone}); err != nil {
		t.Fatal(err)
	}

	// A free loopback port for the balancer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	_ = ln.Close()

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- apilb.Run(runCtx, apilb.Options{
			Listen: listen, Kubeconfig: kubeletConf, UpstreamsFile: upstreams,
			ProbeInterval: apilb.DefaultProbeInterval, ProbeTimeout: apilb.DefaultProbeTimeout,
			RequestTimeout: 30 * time.Second, Retry: 500 * time.Millisecond,
			Dial: cp.DialContext,
		})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// The EndpointSlice lists only the real API server: the saved list
	// loses the other address.
	eventually(ctx, t, "the saved list follows the EndpointSlice", func() error {
		got, err := apilb.ReadUpstreams(upstreams)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{real}) {
			return fmt.Errorf("saved upstreams %v, want [%s]", got, real)
		}
		return nil
	})

	// Through the balancer, as the kubelet: TLS to the API server itself,
	// the node's own certificate authenticating it.
	loaded, err := kubeconfig.Load(kubeletConf)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := kubeconfig.RESTConfig(loaded, "https://"+listen)
	if err != nil {
		t.Fatal(err)
	}
	rc.TLSClientConfig.ServerName = apilb.ServerName
	c, err := apiclient.FromRESTConfig(rc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	review := whoAmI(ctx, t, c.Discovery().RESTClient())
	if review.Username != "system:node:lb-node" {
		t.Errorf("through the balancer the API server saw %q, want the node's own identity", review.Username)
	}
	s, err := c.DiscoveryV1().EndpointSlices(apilb.EndpointSliceNamespace).Get(ctx, apilb.EndpointSliceName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the kubernetes EndpointSlice through the balancer as a node: %v", err)
	}
	if got := apilb.UpstreamsOf(s); !slices.Equal(got, []string{real}) {
		t.Errorf("UpstreamsOf(the real slice) = %v, want [%s]", got, real)
	}
}
