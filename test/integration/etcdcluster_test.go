package integration

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/etcdcluster"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// The second etcd member runs in the control plane's namespace on its own
// loopback address, as a second control-plane node's etcd would on its
// own machine.
const (
	etcdSecondAddress = "10.199.0.3"
	etcdSecondName    = "fast-tier-cp2"
)

// TestEtcdClusterMembership drives the real etcd of a control plane made
// by our kubeadm through what joining, and then resetting, a second
// control-plane node does to the etcd cluster: find the members from the
// API server, add a learner, start its etcd with the --initial-cluster
// given, promote it, remove it.
func TestEtcdClusterMembership(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{})
	ctx := testContext(t, 3*time.Minute)
	firstName := controlplane.DefaultNodeName
	firstPeer := "https://" + net.JoinHostPort(cp.AdvertiseAddress().String(), "2380")
	secondPeer := "https://" + net.JoinHostPort(etcdSecondAddress, "2380")
	secondClient := "https://" + net.JoinHostPort(etcdSecondAddress, "2379")

	// Without a kubelet no mirror Pod exists; publish the one it would.
	etcdPublishMirrorPod(ctx, t, cp)
	endpoints, err := etcdcluster.ClientURLs(ctx, cp.Client())
	if err != nil {
		t.Fatalf("ClientURLs: %v", err)
	}
	if want := "https://" + net.JoinHostPort(cp.AdvertiseAddress().String(), "2379"); len(endpoints) != 1 || endpoints[0] != want {
		t.Fatalf("ClientURLs = %v, want [%s]", endpoints, want)
	}

	c := etcdClient(t, cp, endpoints, time.Minute)
	members, err := c.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	if len(members) != 1 || members[0].Name != firstName || members[0].IsLearner || members[0].PeerURLs[0] != firstPeer {
		t.Fatalf("members of the new cluster: %v, want one voting member %q at %s", members, firstName, firstPeer)
	}
	if err := c.CheckHealth(ctx); err != nil {
		t.Fatalf("CheckHealth: %v", err)
	}

	began := time.Now()
	learner, members, err := c.AddLearner(ctx, etcdSecondName, secondPeer)
	if err != nil {
		t.Fatalf("AddLearner: %v", err)
	}
	t.Logf("learner %s added in %v", learner, time.Since(began).Round(time.Millisecond))
	if !learner.IsLearner || len(members) != 2 {
		t.Fatalf("AddLearner = %v with members %v, want a learner among two", learner, members)
	}
	if again, _, err := c.AddLearner(ctx, etcdSecondName, secondPeer); err != nil || again.ID != learner.ID {
		t.Fatalf("AddLearner again = %v, %v; want the same learner %x", again, err, learner.ID)
	}
	if _, _, err := c.AddLearner(ctx, firstName, "https://10.199.0.9:2380"); err == nil || !strings.Contains(err.Error(), "already exists with other peer URLs") {
		t.Errorf("AddLearner under the first member's name with another address = %v, want a refusal", err)
	}
	// etcd takes one learner at a time: a third node waits, here until a
	// short timeout.
	short := etcdClient(t, cp, endpoints, time.Second)
	if _, _, err := short.AddLearner(ctx, "fast-tier-cp3", "https://10.199.0.4:2380"); err == nil ||
		!strings.Contains(err.Error(), "too many learner members") || !strings.Contains(err.Error(), secondPeer) {
		t.Errorf("AddLearner of a second learner = %v, want etcd's refusal naming the pending learner", err)
	}

	initialCluster := etcdcluster.InitialCluster(members, etcdSecondName, secondPeer)
	if want := firstName + "=" + firstPeer + "," + etcdSecondName + "=" + secondPeer; initialCluster != want {
		t.Fatalf("InitialCluster = %q, want %q", initialCluster, want)
	}

	began = time.Now()
	second := etcdNewNode(t, cp, etcdSecondName, etcdSecondAddress, "etcd2").start(t, initialCluster)
	// Waiting for the promotion is pointless once the second etcd is gone.
	promoteCtx, cancelPromote := context.WithCancel(ctx)
	go func() {
		select {
		case <-second.exited:
			cancelPromote()
		case <-promoteCtx.Done():
		}
	}()
	promoted, err := c.PromoteLearner(promoteCtx, learner.ID)
	cancelPromote()
	if err != nil {
		t.Fatalf("PromoteLearner: %v\nlast lines of the second etcd's log:\n%s", err, second.tail())
	}
	t.Logf("second etcd started and promoted in %v", time.Since(began).Round(time.Millisecond))
	if promoted.IsLearner {
		t.Errorf("PromoteLearner returned %v, still a learner", promoted)
	}
	if _, err := c.PromoteLearner(ctx, learner.ID); err != nil {
		t.Errorf("PromoteLearner again: %v", err)
	}
	members, err = c.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	if len(members) != 2 {
		t.Fatalf("members after the promotion: %v, want two", members)
	}
	for _, m := range members {
		if m.IsLearner || !m.Started() {
			t.Errorf("member %v after the promotion: want a started voting member", m)
		}
	}
	if m, ok := etcdcluster.FindByName(members, etcdSecondName); !ok || len(m.ClientURLs) != 1 || m.ClientURLs[0] != secondClient {
		t.Errorf("second member %v: want client URL %s", m, secondClient)
	}
	both := etcdClient(t, cp, append(endpoints, secondClient), time.Minute)
	if err := both.CheckHealth(ctx); err != nil {
		t.Errorf("CheckHealth of both members: %v", err)
	}

	began = time.Now()
	removed, found, err := c.RemoveByName(ctx, etcdSecondName)
	if err != nil || !found || removed.ID != learner.ID {
		t.Fatalf("RemoveByName = %v, %v, %v", removed, found, err)
	}
	t.Logf("second member removed in %v", time.Since(began).Round(time.Millisecond))
	if _, found, err := c.RemoveByPeerURL(ctx, secondPeer); err != nil || found {
		t.Errorf("RemoveByPeerURL of the removed member = found %v, %v; want not found and no error", found, err)
	}
	if _, _, err := c.RemoveByName(ctx, firstName); !errors.Is(err, etcdcluster.ErrOnlyVoter) {
		t.Errorf("RemoveByName of the only voter = %v, want ErrOnlyVoter", err)
	}
	members, err = c.Members(ctx)
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	if len(members) != 1 || members[0].Name != firstName {
		t.Errorf("members after the removal: %v, want only %q", members, firstName)
	}
	if err := c.CheckHealth(ctx); err != nil {
		t.Errorf("CheckHealth after the removal: %v", err)
	}
	// The API server still has its etcd.
	eventually(ctx, t, "the API server answers after the removal", func() error {
		_, err := cp.Client().CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	// A removed member stops by itself.
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("the removed etcd still runs after 30s")
	}
}

// etcdClient is a client of the control plane's etcd with the API server's
// etcd client certificate, dialing inside the namespace.
func etcdClient(t *testing.T, cp *controlplane.ControlPlane, endpoints []string, retry time.Duration) *etcdcluster.Client {
	t.Helper()
	ca, cert, key := etcdcluster.DefaultCertFiles(cp.HostPath("/etc/kubernetes/pki"))
	c, err := etcdcluster.New(etcdcluster.Config{
		Endpoints:    endpoints,
		CAFile:       ca,
		CertFile:     cert,
		KeyFile:      key,
		DialTimeout:  5 * time.Second,
		CallTimeout:  5 * time.Second,
		RetryTimeout: retry,
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			return cp.DialContext(ctx, "tcp", addr)
		},
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// etcdPublishMirrorPod creates the mirror Pod the kubelet would create for
// the etcd static Pod of our manifest.
func etcdPublishMirrorPod(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	data, err := os.ReadFile(cp.HostPath("/etc/kubernetes/manifests/etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		t.Fatalf("etcd manifest: %v", err)
	}
	pod.Name += "-" + controlplane.DefaultNodeName
	pod.Spec.NodeName = controlplane.DefaultNodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[corev1.MirrorPodAnnotationKey] = "fast-tier"
	eventually(ctx, t, "creating the etcd mirror Pod", func() error {
		_, err := cp.Client().CoreV1().Pods(pod.Namespace).Create(ctx, &pod, metav1.CreateOptions{})
		return err
	})
}

// etcdProcess is a further etcd member's process.
type etcdProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

func (p *etcdProcess) tail() string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// stop ends the process (SIGTERM, SIGKILL after 20s) and waits for it.
// Idempotent.
func (p *etcdProcess) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// etcdNode is a further control-plane node's etcd: its own network
// namespace, linked to the control plane's by a veth pair, and its files
// (certificates from our kubeadm, signed by the first node's etcd CA, as
// the copied CA of a joining control-plane node signs them; its data
// folder).
//
// Its own namespace, rather than a second address on the control plane's
// lo, matters: etcd checks that a peer connects from an address its
// certificate names, and between two addresses of one namespace the kernel
// picks the destination's own address as the source.
type etcdNode struct {
	cp            *controlplane.ControlPlane
	name, address string
	netns         string
	root, pki     string
}

// etcdNewNode makes the node called name at address; veth names its link
// in the control plane's namespace.
func etcdNewNode(t *testing.T, cp *controlplane.ControlPlane, name, address, veth string) *etcdNode {
	t.Helper()
	n := &etcdNode{cp: cp, name: name, address: address, netns: etcdNamespace(t, cp, address, veth)}
	n.root = filepath.Join(t.TempDir(), "root")
	n.pki = filepath.Join(n.root, "etc", "kubernetes", "pki", "etcd")
	if err := os.MkdirAll(n.pki, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "ca.key"} {
		data, err := os.ReadFile(cp.HostPath("/etc/kubernetes/pki/etcd/" + f))
		if err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.Write(filepath.Join(n.pki, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := controlplane.DefaultConfig(netip.MustParseAddr(address), name)
	if err := atomicfile.Write(filepath.Join(n.root, "kubeadm.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cert := range []string{"etcd-server", "etcd-peer"} {
		cmd := exec.Command(cp.KubeadmBinary(), "init", "phase", "certs", cert, "--config", "/kubeadm.yaml", "--rootfs", n.root)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubeadm init phase certs %s for %s: %v\n%s", cert, name, err, out)
		}
	}
	return n
}

func (n *etcdNode) peerURL() string   { return "https://" + net.JoinHostPort(n.address, "2380") }
func (n *etcdNode) clientURL() string { return "https://" + net.JoinHostPort(n.address, "2379") }
func (n *etcdNode) dataDir() string   { return filepath.Join(n.root, "var", "lib", "etcd") }

// start starts the node's etcd to join the existing cluster with
// initialCluster, on the data folder as it is. It is stopped at the end
// of the test.
func (n *etcdNode) start(t *testing.T, initialCluster string) *etcdProcess {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", ".cache", "upstream", "etcd-"+controlplane.EtcdVersion, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--name=" + n.name,
		"--data-dir=" + n.dataDir(),
		"--listen-client-urls=" + n.clientURL(),
		"--advertise-client-urls=" + n.clientURL(),
		"--listen-peer-urls=" + n.peerURL(),
		"--initial-advertise-peer-urls=" + n.peerURL(),
		"--listen-metrics-urls=http://" + n.address + ":2381",
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=existing",
		"--cert-file=" + filepath.Join(n.pki, "server.crt"),
		"--key-file=" + filepath.Join(n.pki, "server.key"),
		"--trusted-ca-file=" + filepath.Join(n.pki, "ca.crt"),
		"--client-cert-auth=true",
		"--peer-cert-file=" + filepath.Join(n.pki, "peer.crt"),
		"--peer-key-file=" + filepath.Join(n.pki, "peer.key"),
		"--peer-trusted-ca-file=" + filepath.Join(n.pki, "ca.crt"),
		"--peer-client-cert-auth=true",
		"--snapshot-count=10000",
	}
	logFile, err := os.CreateTemp(filepath.Dir(n.root), "etcd-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + n.netns, "--", bin}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &etcdProcess{cmd: cmd, log: logFile.Name(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting the etcd of %s: %v", n.name, err)
	}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("last lines of the log %s of %s's etcd:\n%s", p.log, n.name, p.tail())
		}
	})
	return p
}

// etcdNamespace creates a further node's network namespace (held by a
// sleeping child until the test ends) with address on the end of a veth
// pair whose other end, called veth, is in the control plane's namespace.
// The control plane's namespace routes between the nodes' addresses, so
// every member reaches every other from its own address. It returns the
// namespace's path.
func etcdNamespace(t *testing.T, cp *controlplane.ControlPlane, address, veth string) string {
	t.Helper()
	holder := exec.Command("sleep", "infinity")
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatalf("creating the network namespace of %s: %v", address, err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	pid := strconv.Itoa(holder.Process.Pid)
	netns := "/proc/" + pid + "/ns/net"
	first := cp.AdvertiseAddress().String()
	inFirst := [][]string{
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pid},
		{"link", "set", veth, "up"},
		{"route", "add", address + "/32", "dev", veth, "src", first},
	}
	for _, args := range inFirst {
		if out, err := cp.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s in the control plane's namespace: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// /proc/sys/net is that of the namespace of who opens it.
	if out, err := cp.Command("sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward").CombinedOutput(); err != nil {
		t.Fatalf("forwarding in the control plane's namespace: %v\n%s", err, out)
	}
	inSecond := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", "eth0", "up"},
		{"addr", "add", address + "/32", "dev", "eth0"},
		{"route", "add", first + "/32", "dev", "eth0", "src", address},
		// The other nodes, through the control plane's namespace.
		{"route", "add", netip.PrefixFrom(cp.AdvertiseAddress(), 24).Masked().String(), "via", first, "dev", "eth0", "src", address},
	}
	for _, args := range inSecond {
		cmd := exec.Command("nsenter", append([]string{"--net=" + netns, "--", "ip"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ip %s in the namespace of %s: %v\n%s", strings.Join(args, " "), address, err, out)
		}
	}
	return netns
}
