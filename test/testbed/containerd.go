package testbed

import (
	"fmt"
	"net/netip"
	"strings"
)

// containerdConfig is a node's containerd configuration (version 2 of the
// file format, read by containerd 1.6 and 2.x). Paths are those of the
// node's mount view.
//
//   - restrict_oom_score_adj: runc cannot lower its own OOM score on this
//     machine (root lacks CAP_SYS_RESOURCE), and without this every sandbox
//     fails with "can't get final child's PID from pipe";
//   - cgroupfs rather than systemd cgroups: no systemd runs the node;
//   - Debian's CNI plugins are in /usr/lib/cni;
//   - the sandbox image is the pause image kubeadm lists, imported locally;
//   - with registryHosts (a folder of hosts.toml files, see
//     Cluster.ServeImages), pulls go to the hosts it names.
func containerdConfig(pauseImage, registryHosts string) string {
	registry := ""
	if registryHosts != "" {
		registry = fmt.Sprintf(`  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, registryHosts)
	}
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
%s`, pauseImage, registry)
}

// BridgeCNIConfig is a bridge network for the pods of one node: cni0 with
// the node's pod networks (one per address family: a pod gets an address
// from each), masquerading traffic that leaves it. The test bed routes
// each node's pod networks to that node, so pods of different nodes reach
// each other.
func BridgeCNIConfig(pods ...netip.Prefix) string {
	var ranges, routes []string
	for _, p := range pods {
		ranges = append(ranges, fmt.Sprintf(`[{"subnet": %q, "gateway": %q}]`, p.String(), p.Addr().Next().String()))
		anywhere := "0.0.0.0/0"
		if p.Addr().Is6() {
			anywhere = "::/0"
		}
		routes = append(routes, fmt.Sprintf(`{"dst": %q}`, anywhere))
	}
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "testbed",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [%s],
        "routes": [%s]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, strings.Join(ranges, ", "), strings.Join(routes, ", "))
}
