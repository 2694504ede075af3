package testbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Default versions: the Kubernetes release the project deploys and the
// etcd and CoreDNS versions of the images kubeadm lists for it.
// UpgradeFromVersion is the release of the minor version before: the
// upgrade test starts a cluster at it, made by that release's own kubeadm
// (upstream's), with the etcd and CoreDNS versions that kubeadm lists, and
// upgrades it to KubernetesVersion (etcd and CoreDNS included).
// PatchFromVersion is an earlier patch release of UpgradeFromVersion's
// minor version: the patch-upgrade tests go from it to UpgradeFromVersion
// (the module proxy serves no other patch release pair).
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.7.0"
	CoreDNSVersion    = "v1.14.6"

	UpgradeFromVersion        = "v1.36.3"
	UpgradeFromEtcdVersion    = "v3.6.8"
	UpgradeFromCoreDNSVersion = "v1.14.2"

	PatchFromVersion = "v1.36.1"
)

// etcdVersion and coreDNSVersion are the versions of etcd and CoreDNS the
// kubeadm of a Kubernetes release deploys.
func etcdVersion(kubernetes string) string {
	if kubernetes == UpgradeFromVersion {
		return UpgradeFromEtcdVersion
	}
	return EtcdVersion
}

func coreDNSVersion(kubernetes string) string {
	if kubernetes == UpgradeFromVersion {
		return UpgradeFromCoreDNSVersion
	}
	return CoreDNSVersion
}

// Packages are the Debian packages a node needs on the host.
var Packages = []string{"containerd", "runc", "containernetworking-plugins", "iptables",
	"conntrack", "socat", "ethtool", "ebtables", "iproute2", "util-linux", "kmod"}

// packageProbes tells whether a package is installed by a file it owns.
var packageProbes = map[string]string{
	"containerd": "/usr/bin/containerd", "runc": "/usr/sbin/runc", "containernetworking-plugins": "/usr/lib/cni/bridge",
	"iptables": "/usr/sbin/xtables-nft-multi", "conntrack": "/usr/sbin/conntrack", "socat": "/usr/bin/socat",
	"ethtool": "/usr/sbin/ethtool", "ebtables": "/usr/sbin/ebtables", "iproute2": "/usr/sbin/ip",
	"util-linux": "/usr/bin/nsenter", "kmod": "/usr/bin/kmod",
}

// InstallPackages installs with apt the packages that are missing. With
// all of them present it does nothing.
func InstallPackages(ctx context.Context, out io.Writer) error {
	var missing []string
	for _, p := range Packages {
		if _, err := os.Stat(packageProbes[p]); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(out, "[testbed] installing %s\n", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w", args[0], err)
		}
	}
	return nil
}

// Toolchain is everything a cluster is made from: our programs, the
// upstream binaries and the image archives.
type Toolchain struct {
	Repo              string
	KubernetesVersion string
	// Kubeadm is our kubeadm; Testbed the hack/testbed program; Pause,
	// Crash, Resolve and Webserver the test/images programs (see
	// WriteCrashArchive, ResolveImage, WriteWebserverArchive).
	Kubeadm, Testbed, Pause, Crash, Resolve, Webserver string
	// Upstream holds the upstream Kubernetes binaries of KubernetesVersion.
	Upstream   string
	Archives   []string
	PauseImage string
	// Images are the references "kubeadm config images list" printed.
	Images []string
	// iptables are the kube-proxy image's host files, found once and
	// shared with the toolchains WithVersion makes.
	iptables []ImageFile
}

// UpstreamDir is where hack/build-upstream.sh puts a Kubernetes version.
func UpstreamDir(repo, version string) string {
	return filepath.Join(repo, ".cache", "upstream", version)
}

// UpstreamBinaries are the upstream programs a test cluster runs, and
// upstream's kubeadm (the upgrade test makes its older cluster with the
// kubeadm of that release; KUBEADM_E2E_KUBEADM runs the tests with it).
var UpstreamBinaries = []string{"kubeadm", "kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubectl", "etcd", "etcdctl", "coredns"}

// MissingUpstream lists the upstream binaries of version that are not
// built yet.
func MissingUpstream(repo, version string) []string {
	var missing []string
	for _, b := range UpstreamBinaries {
		if _, err := os.Stat(upstreamBinary(repo, version, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

func upstreamBinary(repo, version, name string) string {
	switch name {
	case "etcd", "etcdctl":
		return filepath.Join(repo, ".cache", "upstream", "etcd-"+etcdVersion(version), name)
	case "coredns":
		return filepath.Join(repo, ".cache", "upstream", "coredns-"+coreDNSVersion(version), "coredns")
	}
	return filepath.Join(UpstreamDir(repo, version), name)
}

// BuildUpstream builds the missing upstream binaries of version with
// hack/build-upstream.sh (slow the first time, see docs/testbed.md).
func BuildUpstream(ctx context.Context, repo, version string, out io.Writer) error {
	missing := MissingUpstream(repo, version)
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(out, "[testbed] building upstream %s: %s (minutes the first time)\n", version, strings.Join(missing, " "))
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "hack", "build-upstream.sh"), missing...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "K8S_VERSION="+version, "ETCD_VERSION="+etcdVersion(version), "COREDNS_VERSION="+coreDNSVersion(version))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/build-upstream.sh: %w", err)
	}
	return nil
}

// Build builds our kubeadm, the test bed program and the pause, crash and
// webserver programs into binDir, and the image archives of version into
// .cache/images/<version>. The upstream binaries must be built already.
func Build(ctx context.Context, repo, version, binDir string, out io.Writer) (*Toolchain, error) {
	if err := checkUpstream(repo, version); err != nil {
		return nil, err
	}
	start := time.Now()
	t := &Toolchain{Repo: repo, Kubeadm: filepath.Join(binDir, "kubeadm"),
		Testbed: filepath.Join(binDir, "testbed"), Crash: filepath.Join(binDir, "crash"),
		Pause: filepath.Join(binDir, "pause"), Resolve: filepath.Join(binDir, "resolve"),
		Webserver: filepath.Join(binDir, "webserver")}
	for _, b := range []struct {
		out, pkg string
		flags    []string
	}{
		// kubeadm as "make build" makes it, like upstream's releases.
		{t.Kubeadm, "./cmd/kubeadm", []string{"-trimpath", "-ldflags=-s -w"}},
		{t.Testbed, "./hack/testbed", nil},
		{t.Pause, "./test/images/pause", nil}, {t.Crash, "./test/images/crash", nil},
		{t.Resolve, "./test/images/resolve", nil}, {t.Webserver, "./test/images/webserver", nil},
	} {
		// Built beside and renamed into place: a running node's boot
		// program is this very file, which cannot be written to.
		tmp := b.out + ".new"
		args := append(append([]string{"build"}, b.flags...), "-o", tmp, b.pkg)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", b.pkg, err, msg)
		}
		if err := os.Rename(tmp, b.out); err != nil {
			return nil, err
		}
	}
	if err := t.makeImages(ctx, version, t.Kubeadm); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "[testbed] programs and %d images of %s ready in %.1fs\n", len(t.Images), version, time.Since(start).Seconds())
	return t, nil
}

// WithVersion returns a toolchain with the same programs as t (our
// kubeadm, the test bed, pause and crash) and the upstream binaries and
// image archives of another Kubernetes version, writing the archives that
// are missing or older than their binaries. The images are those the
// upstream kubeadm of that version lists (a cluster it made runs them).
// The upstream binaries of that version must be built already
// (BuildUpstream).
func (t *Toolchain) WithVersion(ctx context.Context, version string, out io.Writer) (*Toolchain, error) {
	if err := checkUpstream(t.Repo, version); err != nil {
		return nil, err
	}
	start := time.Now()
	v := &Toolchain{Repo: t.Repo, Kubeadm: t.Kubeadm, Testbed: t.Testbed, Pause: t.Pause, Crash: t.Crash,
		Resolve: t.Resolve, Webserver: t.Webserver, iptables: t.iptables}
	if err := v.makeImages(ctx, version, upstreamBinary(t.Repo, version, "kubeadm")); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "[testbed] %d images of %s ready in %.1fs\n", len(v.Images), version, time.Since(start).Seconds())
	return v, nil
}

// checkUpstream fails when upstream binaries of version are missing.
func checkUpstream(repo, version string) error {
	if missing := MissingUpstream(repo, version); len(missing) > 0 {
		return fmt.Errorf("upstream binaries of %s not built: %s (run K8S_VERSION=%s hack/build-upstream.sh %s)",
			version, strings.Join(missing, ", "), version, strings.Join(missing, " "))
	}
	return nil
}

// makeImages sets t's version, upstream folder and image list (what the
// kubeadm program lister lists for version) and writes the image archives
// into .cache/images/<version>. The pause program must be built.
func (t *Toolchain) makeImages(ctx context.Context, version, lister string) error {
	t.KubernetesVersion, t.Upstream = version, UpstreamDir(t.Repo, version)
	list, err := exec.CommandContext(ctx, lister, "config", "images", "list", "--kubernetes-version", version).Output()
	if err != nil {
		return fmt.Errorf("kubeadm config images list --kubernetes-version %s: %w", version, err)
	}
	t.Images = strings.Fields(string(bytes.TrimSpace(list)))
	for _, ref := range t.Images {
		if imageName(ref) == "pause" {
			t.PauseImage = ref
		}
	}
	if t.iptables == nil {
		if t.iptables, err = iptablesFiles(); err != nil {
			return fmt.Errorf("the kube-proxy image: %w", err)
		}
	}
	images, err := Images(t.Images, Binaries{
		Kubernetes: t.Upstream, Etcd: upstreamBinary(t.Repo, version, "etcd"),
		CoreDNS: upstreamBinary(t.Repo, version, "coredns"), Pause: t.Pause, Iptables: t.iptables,
	})
	if err != nil {
		return err
	}
	t.Archives, err = WriteArchives(filepath.Join(t.Repo, ".cache", "images", version), images)
	return err
}

// Archive returns the archive that carries the image ref, one of t.Images
// (a test imports it again to put back an image it replaced).
func (t *Toolchain) Archive(ref string) (string, error) {
	for _, a := range t.Archives {
		if filepath.Base(a) == ArchiveName(ref) {
			return a, nil
		}
	}
	return "", fmt.Errorf("no archive of %s among the images of %s", ref, t.KubernetesVersion)
}

// UpstreamBinary is the path of the upstream program name (one of
// UpstreamBinaries) of t's version.
func (t *Toolchain) UpstreamBinary(name string) string {
	return upstreamBinary(t.Repo, t.KubernetesVersion, name)
}

// Cluster returns a cluster made from the toolchain.
func (t *Toolchain) Cluster(name, stateDir string, out io.Writer) *Cluster {
	return &Cluster{
		Name: name, StateDir: stateDir, Testbed: t.Testbed, Out: out,
		Archives: t.Archives, PauseImage: t.PauseImage,
		Programs: map[string]string{
			"kubeadm": t.Kubeadm,
			"kubelet": filepath.Join(t.Upstream, "kubelet"),
			"kubectl": filepath.Join(t.Upstream, "kubectl"),
			"etcdctl": upstreamBinary(t.Repo, t.KubernetesVersion, "etcdctl"),
		},
	}
}

// UpgradeCluster returns a cluster made from t (its kubelet, kubectl and
// images) whose nodes also import the images of to, so that the cluster
// can be upgraded to to's version without a registry. An image both
// versions list (pause) is imported once. The nodes also have the upstream
// kubeadm of t's version as OldKubeadm, to make the cluster as that
// release made it. The kubelet of a node is switched afterwards with
// Node.SetProgram.
func (t *Toolchain) UpgradeCluster(to *Toolchain, name, stateDir string, out io.Writer) *Cluster {
	c := t.Cluster(name, stateDir, out)
	c.Programs[OldKubeadm] = t.UpstreamBinary("kubeadm")
	seen := map[string]bool{}
	var archives []string
	for _, a := range append(append([]string(nil), t.Archives...), to.Archives...) {
		if !seen[filepath.Base(a)] {
			seen[filepath.Base(a)] = true
			archives = append(archives, a)
		}
	}
	c.Archives = archives
	return c
}

// OldKubeadm is the name of the older release's kubeadm on the nodes of
// an UpgradeCluster.
const OldKubeadm = "kubeadm-old"

// InitConfig is a kubeadm configuration for the first control-plane node
// of a test cluster on n: its address and name, the node's own address as
// the cluster's stable endpoint (so more control-plane nodes can join),
// images already imported
// (imagePullPolicy Never), the kubelets with cgroupfs and cgroup v1
// allowed (this machine has cgroup v1), no eviction or image garbage
// collection for disk space (as kind's nodes: the nodes share the
// machine's disk, whose free part often stays under the kubelet's
// default thresholds, 15 % for images, 85 % used for image GC, while
// other work fills it, and a node under disk pressure evicts the pods of
// a running test and deletes the images it cannot pull again), and
// kube-proxy told not to size the conntrack table (read-only inside a
// network namespace). extra is
// appended as more YAML documents. (The node's own cgroup root reaches its
// kubelet through /etc/default/kubelet, as for every node.)
func InitConfig(n *Node, version, extra string) string {
	return InitConfigBehind(n, version, netip.AddrPortFrom(n.Addr(), 6443), extra)
}

// InitConfigBehind is InitConfig with controlPlaneEndpoint set to endpoint
// (the cluster's API server load balancer, APILoadBalancerAddr) instead
// of the first node's API server.
func InitConfigBehind(n *Node, version string, endpoint netip.AddrPort, extra string) string {
	cfg := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
nodeRegistration:
  name: %s
  imagePullPolicy: Never
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
controlPlaneEndpoint: %s
networking:
  podSubnet: 10.244.0.0/16
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
evictionHard:
  imagefs.available: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
imageGCHighThresholdPercent: 100
---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
conntrack:
  maxPerCore: 0
`, n.Addr(), n.Name, version, endpoint)
	if extra != "" {
		cfg += "---\n" + extra
	}
	return cfg
}

// PreflightFindings are the preflight checks that fail on this machine for
// reasons of the machine, not of kubeadm: cgroup v1 (SystemVerification)
// and IP forwarding off in a new network namespace.
var PreflightFindings = []string{"SystemVerification", "FileContent--proc-sys-net-ipv4-ip_forward"}

// modulePath identifies this repository's go.mod.
const modulePath = "github.com/kubeadm-go/kubeadm"

// RepoRoot finds this repository from the working folder upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working folder: run this inside the repository", modulePath)
		}
		dir = parent
	}
}
