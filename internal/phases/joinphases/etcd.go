package joinphases

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/hostprocess"
	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// etcdPeerPort is where every stacked etcd member talks to its peers.
const etcdPeerPort = 2380

// onlyStackedEtcd passes a phase over unless this node joins the control
// plane with a local (stacked) etcd member.
func onlyStackedEtcd(d *Data) (bool, error) {
	if !d.IsControlPlane() {
		return false, nil
	}
	cfg, err := d.InitConfig(context.Background())
	if err != nil {
		return false, err
	}
	return cfg.Etcd.External == nil, nil
}

// CheckEtcdPhase checks, before a control-plane node adds its etcd
// member, that every member of the cluster's etcd answers: adding a member
// to an unhealthy cluster can cost it its quorum. Hidden, as upstream's.
func CheckEtcdPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:   "check-etcd",
		Short:  "Check that the cluster's etcd is healthy",
		Hidden: true,
		RunIf:  onlyStackedEtcd,
		Run: func(ctx context.Context, d *Data) error {
			if d.DryRun {
				fmt.Fprintln(d.Out, "[dryrun] Would check that the cluster's etcd is healthy")
				return nil
			}
			c, err := etcdClient(ctx, d)
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Fprintf(d.Out, "[check-etcd] Checking that the etcd cluster is healthy\n")
			return c.CheckHealth(ctx)
		},
	}
}

// EtcdJoinPhase adds this node's etcd member to the cluster's etcd: it is
// announced as a learner, its static Pod manifest names every member with
// --initial-cluster-state=existing, and once it has caught up it is
// promoted to a voting member. Re-running it finds the member by its peer
// URL and carries on from where it stopped.
func EtcdJoinPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:         "etcd-join",
		Short:        "Add this node's etcd member to the cluster's etcd",
		InheritFlags: withFlags("control-plane", "certificate-key", "apiserver-advertise-address", "patches"),
		RunIf:        onlyStackedEtcd,
		Run:          runEtcdJoin,
	}
}

func runEtcdJoin(ctx context.Context, d *Data) error {
	v, err := d.InitView(ctx)
	if err != nil {
		return err
	}
	cfg := v.Cfg
	name := cfg.NodeRegistration.Name
	peerURL := "https://" + net.JoinHostPort(cfg.LocalAPIEndpoint.AdvertiseAddress, strconv.Itoa(etcdPeerPort))
	if d.DryRun {
		fmt.Fprintf(d.Out, "[dryrun] Would add etcd member %q (%s) to the cluster's etcd as a learner and promote it\n", name, peerURL)
		v.EtcdInitialCluster = name + "=" + peerURL
		return workflow.RunTree(ctx, initphases.EtcdPhase(), v, nil)
	}
	c, err := etcdClient(ctx, d)
	if err != nil {
		return err
	}
	defer c.Close()
	member, members, err := c.AddLearner(ctx, name, peerURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[etcd] Announced the new etcd member %q to the existing etcd cluster as a learner\n", name)
	v.EtcdInitialCluster = etcd.InitialCluster(members, name, peerURL)
	if err := workflow.RunTree(ctx, initphases.EtcdPhase(), v, nil); err != nil {
		return err
	}
	timeout := etcdTimeout(cfg.Timeouts)
	fmt.Fprintf(d.Out, "[etcd] Waiting for the new etcd member to catch up and become a voting member. This can take up to %v\n", timeout)
	start := time.Now()
	if _, err := c.PromoteLearner(ctx, member.ID); err != nil {
		return fmt.Errorf("promoting etcd member %q: %w", name, err)
	}
	fmt.Fprintf(d.Out, "[etcd] The etcd member %q votes after %v\n", name, time.Since(start).Round(time.Millisecond))
	return nil
}

// etcdClient connects to the cluster's etcd members, found from the etcd
// static Pods the API server knows, with the etcd client certificate this
// node made in control-plane-prepare.
func etcdClient(ctx context.Context, d *Data) (*etcd.Client, error) {
	v, err := d.InitView(ctx)
	if err != nil {
		return nil, err
	}
	api, err := v.Client(ctx)
	if err != nil {
		return nil, err
	}
	return newEtcdClient(ctx, api, v.CertDir, v.Cfg)
}

func newEtcdClient(ctx context.Context, api kubernetes.Interface, certDir string, cfg *kubeadm.InitConfiguration) (*etcd.Client, error) {
	lookup, cancel := context.WithTimeout(ctx, apiCallTimeout(cfg.Timeouts))
	defer cancel()
	urls, err := etcd.ClientURLs(lookup, api)
	if err != nil && hostprocess.Enabled(cfg.FeatureGates) {
		// A control plane of host processes has no etcd Pods: its members
		// listen where the API servers do.
		urls, err = etcd.StackedClientURLs(lookup, api)
	}
	if err != nil {
		return nil, err
	}
	caFile, certFile, keyFile := etcd.DefaultCertFiles(certDir)
	c, err := etcd.New(etcd.Config{
		Endpoints: urls,
		CAFile:    caFile, CertFile: certFile, KeyFile: keyFile,
		DialTimeout:  5 * time.Second,
		CallTimeout:  10 * time.Second,
		RetryTimeout: etcdTimeout(cfg.Timeouts),
	})
	if err != nil {
		return nil, err
	}
	// The Pods may still show a member that is gone (a control-plane node
	// reset, maybe this very one joining again): talk to the members etcd
	// lists instead.
	if err := c.SyncEndpoints(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// etcdTimeout is timeouts.etcdAPICall, or its default.
func etcdTimeout(t *kubeadm.Timeouts) time.Duration {
	if t != nil && t.EtcdAPICall != nil && t.EtcdAPICall.Duration > 0 {
		return t.EtcdAPICall.Duration
	}
	return v1beta4.DefaultEtcdAPICall
}
