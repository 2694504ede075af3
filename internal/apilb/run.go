package apilb

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
)

// Options are what the balancer program runs with.
type Options struct {
	// Listen is the address to serve (ListenAddress).
	Listen string
	// Kubeconfig names the credentials and CA used to probe the upstreams
	// and to watch the EndpointSlice (the kubelet's kubelet.conf).
	Kubeconfig string
	// ClientCertFile, when it can be read, is the client certificate and
	// key used instead of the kubeconfig's (KubeletClientCertFile).
	ClientCertFile string
	// UpstreamsFile is the saved upstream list, read at start and
	// rewritten when the cluster's list changes.
	UpstreamsFile string
	// Preferred is this node's own API server on a control-plane node.
	Preferred string
	// ProbeInterval and ProbeTimeout: see Config.
	ProbeInterval, ProbeTimeout time.Duration
	// RequestTimeout bounds each request of the EndpointSlice watch.
	RequestTimeout time.Duration
	// Retry is the wait after a failed watch or credential load.
	Retry time.Duration
	// Dial opens connections to the upstreams, for probes and forwarding
	// (a net.Dialer's when nil).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// reportInterval is how often Run logs how connections spread (when that
// changed).
const reportInterval = 10 * time.Second

// Run serves the balancer until ctx ends. It starts forwarding to the
// saved list at once; probing waits until the kubeconfig can be read (the
// kubelet writes it after its TLS bootstrap), and until then every upstream
// stays unprobed and is tried in turn.
func Run(ctx context.Context, o Options) error {
	list, err := ReadUpstreams(o.UpstreamsFile)
	if err != nil {
		return err
	}
	if len(list) == 0 && o.Preferred == "" {
		klog.Warningf("%s lists no API server; waiting to learn them from the cluster", o.UpstreamsFile)
	}
	var (
		mu     sync.Mutex
		prober Prober
	)
	probe := func(pctx context.Context, addr string) error {
		mu.Lock()
		p := prober
		if p == nil {
			tlsCfg, err := TLSFromKubeconfig(o.Kubeconfig, o.ClientCertFile)
			if err != nil {
				mu.Unlock()
				return fmt.Errorf("no credentials to probe with yet: %w", err)
			}
			prober = ReadyzProber(tlsCfg, o.Dial)
			p = prober
		}
		mu.Unlock()
		return p(pctx, addr)
	}
	lb := New(Config{Preferred: o.Preferred, Probe: probe, ProbeInterval: o.ProbeInterval, ProbeTimeout: o.ProbeTimeout, Dial: o.Dial, ReportInterval: reportInterval})
	lb.SetUpstreams(list)

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	klog.Infof("forwarding %s to the API servers %v", o.Listen, lb.Upstreams())

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	saved := slices.Clone(list)
	wg.Go(func() {
		Watch(ctx, func() (kubernetes.Interface, error) { return throughBalancer(o) }, o.Retry, func(found []string) {
			found, err := NormalizeUpstreams(found)
			if err != nil {
				klog.Warningf("ignoring the API servers of EndpointSlice %s/%s: %v", EndpointSliceNamespace, EndpointSliceName, err)
				return
			}
			lb.SetUpstreams(found)
			if slices.Equal(found, saved) {
				return
			}
			if err := WriteUpstreams(o.UpstreamsFile, found); err != nil {
				klog.Warningf("saving the API server list: %v", err)
				return
			}
			saved = found
		})
	})
	err = lb.Serve(ctx, ln)
	cancel()
	wg.Wait()
	return err
}

// throughBalancer returns a client that reaches the cluster through the
// balancer itself, with the kubeconfig's credentials read afresh.
func throughBalancer(o Options) (kubernetes.Interface, error) {
	kc, err := kubeconfig.Load(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg, err := kubeconfig.RESTConfig(kc, "https://"+o.Listen)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	cfg.TLSClientConfig.ServerName = ServerName
	certPEM, keyPEM, err := ClientCertificate(o.Kubeconfig, o.ClientCertFile)
	if err != nil {
		return nil, err
	}
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = certPEM, keyPEM
	return apiclient.FromRESTConfig(cfg, o.RequestTimeout)
}
