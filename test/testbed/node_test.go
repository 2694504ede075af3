package testbed

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeLifecycle starts two nodes without images and checks what makes
// them nodes: own host name, own folders, their own network reaching each
// other, containerd answering, the stand-in systemctl driving the kubelet
// service; then that Down leaves nothing behind.
func TestNodeLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nodes; not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat("/usr/bin/containerd"); err != nil {
		t.Skip("containerd not installed (hack/testbed prepare installs it)")
	}
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	tb := filepath.Join(bin, "testbed")
	if out, err := exec.Command("go", "build", "-o", tb, filepath.Join(repo, "hack", "testbed")).CombinedOutput(); err != nil {
		t.Fatalf("building the test bed: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := &Cluster{Name: "tbt", StateDir: filepath.Join(t.TempDir(), "state"), Testbed: tb,
		PauseImage: "registry.k8s.io/pause:3.10.2", Programs: map[string]string{"true-program": "/bin/true"}}
	t.Cleanup(func() {
		start := time.Now()
		defer func() { t.Logf("down in %v", time.Since(start)) }()
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("Down: %v", err)
		}
		for _, n := range []string{"tbt-hub", "tbt-n1", "tbt-n2"} {
			if netnsExists(n) {
				t.Errorf("network namespace %s left behind", n)
			}
		}
		if _, err := os.Stat("/sys/fs/cgroup/memory/tbt-n1"); err == nil {
			t.Errorf("cgroup tbt-n1 left behind")
		}
	})
	start := time.Now()
	nodes, err := c.Up(ctx, "n1", "n2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two nodes up in %v", time.Since(start))
	n1, n2 := nodes[0], nodes[1]
	// Up a second time leaves running nodes alone.
	if _, err := c.Up(ctx, "n1", "n2"); err != nil {
		t.Fatalf("second Up: %v", err)
	}

	run := func(n *Node, name string, args ...string) (string, error) {
		out, err := n.Command(ctx, name, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if got, err := run(n1, "hostname"); err != nil || got != "n1" {
		t.Errorf("hostname in n1 = %q, %v", got, err)
	}
	if _, err := run(n1, "sh", "-c", "echo one > /etc/kubernetes/marker"); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(n1.HostPath("/etc/kubernetes/marker")); err != nil || string(data) != "one\n" {
		t.Errorf("n1's /etc/kubernetes/marker on the host: %q, %v", data, err)
	}
	if got, _ := run(n2, "ls", "/etc/kubernetes"); got != "" {
		t.Errorf("n2 sees n1's /etc/kubernetes: %q", got)
	}
	if _, err := os.Stat("/etc/kubernetes/marker"); err == nil {
		t.Errorf("the host sees n1's /etc/kubernetes")
	}
	// n1 reaches n2 by name over the cluster network.
	reach := func(listen, dial string) string {
		listener := n2.Command(ctx, "socat", "-T10", listen+",reuseaddr", "SYSTEM:echo hello-from-n2")
		if err := listener.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = listener.Process.Kill()
			_ = listener.Wait()
		}()
		var got string
		for i := 0; i < 50; i++ {
			if got, _ = run(n1, "socat", "-T2", "-", dial); got == "hello-from-n2" {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return got
	}
	if got := reach("TCP-LISTEN:7777", "TCP:n2:7777"); got != "hello-from-n2" {
		t.Errorf("n1 -> n2:7777 = %q", got)
	}
	if got, err := run(n1, "ip", "-4", "-o", "addr", "show", "eth0"); err != nil || !strings.Contains(got, n1.Addr().String()) {
		t.Errorf("n1's eth0: %q, %v", got, err)
	}
	// With the IPv6 network added (twice: it is safe to repeat), n1
	// reaches n2's IPv6 address.
	for i := 0; i < 2; i++ {
		if err := c.EnableIPv6(ctx, nodes); err != nil {
			t.Fatalf("EnableIPv6: %v", err)
		}
	}
	if got := reach("TCP6-LISTEN:7778", "TCP6:["+n2.Addr6().String()+"]:7778"); got != "hello-from-n2" {
		t.Errorf("n1 -> [%s]:7778 = %q", n2.Addr6(), got)
	}
	if got, err := run(n1, "ctr", "-a", "/run/containerd/containerd.sock", "version"); err != nil {
		t.Errorf("containerd in n1: %v: %s", err, got)
	}
	if got, err := run(n1, "systemctl", "is-active", "containerd"); err != nil || got != "active" {
		t.Errorf("systemctl is-active containerd = %q, %v", got, err)
	}
	// The kubelet has no configuration: it keeps exiting and coming back.
	if got, _ := run(n1, "systemctl", "is-active", "kubelet"); got == "inactive" {
		t.Errorf("kubelet service should be enabled at boot, is %q", got)
	}
	if _, err := run(n1, "systemctl", "stop", "kubelet"); err != nil {
		t.Errorf("systemctl stop kubelet: %v", err)
	}
	if got, _ := run(n1, "systemctl", "is-active", "kubelet"); got != "inactive" {
		t.Errorf("after stop, kubelet is %q", got)
	}
	if got, err := run(n1, "systemctl", "status", "no-such-unit"); err == nil || !strings.Contains(got, "could not be found") {
		t.Errorf("status of an unknown unit: %q, %v", got, err)
	}
	// A service unit of /etc/systemd/system runs when started, comes back
	// after a kill -9, stops, and is unknown once its file is gone.
	unit := "[Service]\nExecStart=/bin/sh -c \"exec sleep 1000\"\nRestart=always\nRestartSec=200ms\n"
	if err := os.WriteFile(filepath.Join(n1.Dir, "etc-systemd-system", "tbt-sleep.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"enable", "tbt-sleep"}, {"start", "tbt-sleep"}} {
		if got, err := run(n1, "systemctl", args...); err != nil {
			t.Errorf("systemctl %v: %v: %s", args, err, got)
		}
	}
	mainPID := func() string {
		got, _ := run(n1, "systemctl", "show", "--property=MainPID", "tbt-sleep")
		pid, _, _ := strings.Cut(strings.TrimPrefix(got, "MainPID="), "\n")
		return pid
	}
	first := mainPID()
	if got, err := run(n1, "systemctl", "is-active", "tbt-sleep"); err != nil || got != "active" || first == "0" {
		t.Errorf("the unit is %q (%v), MainPID %s", got, err, first)
	}
	if got, err := run(n1, "kill", "-9", first); err != nil {
		t.Errorf("kill -9 %s: %v: %s", first, err, got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pid := mainPID(); pid == first || pid == "0"; pid = mainPID() {
		if time.Now().After(deadline) {
			t.Errorf("the killed unit did not come back (MainPID %s)", pid)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := run(n1, "systemctl", "stop", "tbt-sleep"); err != nil {
		t.Errorf("stop: %v", err)
	}
	if got, _ := run(n1, "systemctl", "is-active", "tbt-sleep"); got != "inactive" {
		t.Errorf("after stop the unit is %q", got)
	}
	if err := os.Remove(filepath.Join(n1.Dir, "etc-systemd-system", "tbt-sleep.service")); err != nil {
		t.Fatal(err)
	}
	if got, err := run(n1, "systemctl", "status", "tbt-sleep"); err == nil || !strings.Contains(got, "could not be found") {
		t.Errorf("status of a deleted unit: %q, %v", got, err)
	}
	if got, err := run(n1, "ps", "-e", "-o", "pid=,comm="); err == nil {
		if !strings.Contains(got, "1 testbed") {
			t.Errorf("the boot program is not the node's PID 1:\n%s", got)
		}
	}
}

func TestServiceLaunches(t *testing.T) {
	log := filepath.Join(t.TempDir(), "kubelet.log")
	first := time.Date(2026, 11, 25, 8, 9, 8, 876095572, time.UTC)
	second := first.Add(4 * time.Second)
	content := launchPrefix + first.Format(time.RFC3339Nano) + launchInfix + "kubelet --config=/var/lib/kubelet/config.yaml\n" +
		"E1125 08:09:08.9 ... failed to load kubelet config file\n" +
		"==== not a time starting: x\n" +
		launchPrefix + second.Format(time.RFC3339Nano) + launchInfix + "kubelet\n"
	if err := os.WriteFile(log, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := serviceLaunches(log)
	if err != nil || len(got) != 2 || !got[0].Equal(first) || !got[1].Equal(second) {
		t.Errorf("launches %v, %v; want [%v %v]", got, err, first, second)
	}
}

func TestIPv6Addresses(t *testing.T) {
	n := &Node{Index: 3}
	if got := n.Addr6().String(); got != "fd99::13" {
		t.Errorf("Addr6 = %s", got)
	}
	if got := n.PodPrefix6().String(); got != "fd00:10:244:3::/64" {
		t.Errorf("PodPrefix6 = %s", got)
	}
	cni := BridgeCNIConfig(n.PodPrefix6())
	for _, want := range []string{`"subnet": "fd00:10:244:3::/64"`, `"gateway": "fd00:10:244:3::1"`, `{"dst": "::/0"}`} {
		if !strings.Contains(cni, want) {
			t.Errorf("IPv6 CNI configuration lacks %s:\n%s", want, cni)
		}
	}
	if cni := BridgeCNIConfig(n.PodPrefix()); !strings.Contains(cni, `{"dst": "0.0.0.0/0"}`) {
		t.Errorf("IPv4 CNI configuration:\n%s", cni)
	}
	dual := BridgeCNIConfig(n.PodPrefix(), n.PodPrefix6())
	var parsed struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]struct{ Subnet string }
				Routes []struct{ Dst string }
			}
		}
	}
	if err := json.Unmarshal([]byte(dual), &parsed); err != nil {
		t.Fatalf("dual-stack CNI configuration: %v\n%s", err, dual)
	}
	ipam := parsed.Plugins[0].IPAM
	if len(ipam.Ranges) != 2 || ipam.Ranges[0][0].Subnet != n.PodPrefix().String() || ipam.Ranges[1][0].Subnet != "fd00:10:244:3::/64" ||
		len(ipam.Routes) != 2 || ipam.Routes[0].Dst != "0.0.0.0/0" || ipam.Routes[1].Dst != "::/0" {
		t.Errorf("dual-stack CNI configuration: %+v\n%s", ipam, dual)
	}
}
