package initphases

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/images"
)

// APIServerLBEnabled reports whether the NodeLocalAPILoadBalancer gate is
// on for d's cluster.
func APIServerLBEnabled(d *Data) bool { return apilb.Enabled(d.Cfg.FeatureGates) }

// LocalAPIServer is this node's own API server as host:port.
func LocalAPIServer(d *Data) string {
	ep := d.Cfg.LocalAPIEndpoint
	return net.JoinHostPort(ep.AdvertiseAddress, strconv.Itoa(int(ep.BindPort)))
}

// InstallAPIServerLB puts the node-local API server load balancer on this
// node (docs/decisions/009): the running kubeadm binary, the saved list
// seeded with seed, and the static Pod manifest, preferring preferred
// (this node's API server; "" on a worker). Under --dry-run only the
// manifest is written, into the dry-run folder. Idempotent.
func InstallAPIServerLB(d *Data, seed []string, preferred string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the kubeadm binary to run the API server load balancer: %w", err)
	}
	return apilb.Install(apilb.InstallOptions{
		PodOptions: apilb.PodOptions{
			Image:         images.PauseImage(&d.Cfg.ClusterConfiguration),
			KubernetesDir: KubernetesDir,
			Preferred:     preferred,
		},
		ManifestDir: d.ManifestDir,
		Source:      exe,
		Seed:        seed,
		DryRun:      d.DryRun,
		Out:         d.Out,
	})
}
