package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/test/testbed"
)

// TestCertsRenewal is the automatic certificate renewal on a real node:
// init installs the daily timer; certificates made with a short validity
// are renewed by the command the timer runs, run as the timer runs it,
// while a kubectl loop sees no failure and the node stays Ready; the
// controller manager and scheduler are restarted, the API server and etcd
// load their new certificates themselves; a second run renews nothing;
// without the CA key a run fails naming what expires; reset removes the
// timer.
func TestCertsRenewal(t *testing.T) {
	if otherKubeadm() {
		t.Skip("the automatic renewal is ours only")
	}
	n, cfg := singleNode(t, "e2erenew")
	short := filepath.Join(n.Dir, "short.yaml")
	writeFile(t, short, editInitConfig(t, n, [][2]string{{"kubernetesVersion: ", "certificateValidityPeriod: 48h0m0s\nkubernetesVersion: "}}))
	// Some certificates and kubeconfig files made valid for two days (CAs
	// get their usual ten years); init makes the others, for a year.
	for _, c := range []string{"ca", "apiserver", "apiserver-kubelet-client", "front-proxy-ca", "front-proxy-client", "etcd-ca", "etcd-server", "apiserver-etcd-client"} {
		mustRun(t, n, "kubeadm", "init", "phase", "certs", c, "--config", short)
	}
	for _, k := range []string{"admin", "controller-manager", "scheduler"} {
		mustRun(t, n, "kubeadm", "init", "phase", "kubeconfig", k, "--config", short)
	}
	out := mustRun(t, n, "kubeadm", "init", "--config", cfg, ignoreFindings())
	service := n.HostPath("/etc/systemd/system/" + certrenewal.UnitName + ".service")
	for _, want := range []string{`[certs-renewal] Writing "/etc/systemd/system/kubeadm-certs-renewal.service"`, `[certs-renewal] Writing "/etc/systemd/system/kubeadm-certs-renewal.timer"`} {
		if !strings.Contains(out, want) {
			t.Errorf("init did not say %q:\n%s", want, out)
		}
	}
	if got := strings.TrimSpace(mustRun(t, n, "systemctl", "is-enabled", certrenewal.UnitName+".timer")); got != "enabled" {
		t.Errorf("timer: %q", got)
	}
	nodeReady(t, n, "node1", 90*time.Second)
	for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		eventually(t, 90*time.Second, comp+" ready", func() error {
			return expectOutput(kubectlTry(t, n, "-n", "kube-system", "get", "pod", comp+"-node1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`), "True")
		})
	}
	check := mustRun(t, n, "kubeadm", "certs", "check-expiration")
	if !strings.Contains(check, "Automatic renewal: installed (/etc/systemd/system/kubeadm-certs-renewal.service, /etc/systemd/system/kubeadm-certs-renewal.timer)") ||
		!strings.Contains(check, "Last renewal run: never") {
		t.Errorf("check-expiration:\n%s", check)
	}

	// The command line the timer runs.
	argv := execStart(t, service)
	if filepath.Base(argv[0]) != "kubeadm" || strings.Join(argv[1:], " ") != "certs renew expiring" {
		t.Fatalf("ExecStart %q", argv)
	}
	pkiDir, kubeDir := n.HostPath("/etc/kubernetes/pki"), n.HostPath("/etc/kubernetes")
	before := treeDigest(t, kubeDir)
	restarts := containerRestarts(t, n)

	loop := startAPILoop(t, n)
	r := run(t, n, argv[0], argv[1:]...)
	time.Sleep(3 * time.Second) // the loop goes on a little after the run
	tries, failures := loop.stop()
	t.Logf("renewal run took %v:\n%s%s", r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
	if r.Code != 0 {
		t.Fatalf("the renewal failed: exit %d", r.Code)
	}
	t.Logf("kubectl loop: %d tries during the run, %d failed", tries, len(failures))
	if len(failures) > 0 || tries < 10 {
		t.Errorf("kubectl loop: %d tries, failures:\n%s", tries, strings.Join(failures, "\n"))
	}
	rep := renewalStatus(t, n)
	wantRenewed := []string{"admin.conf", "apiserver", "apiserver-etcd-client", "apiserver-kubelet-client", "controller-manager.conf", "etcd-server", "front-proxy-client", "scheduler.conf"}
	if got := certNames(rep.Renewed); !reflect.DeepEqual(got, wantRenewed) {
		t.Errorf("renewed %v\nwant    %v", got, wantRenewed)
	}
	if got := certNames(rep.NotDue); !reflect.DeepEqual(got, []string{"etcd-healthcheck-client", "etcd-peer", "super-admin.conf"}) {
		t.Errorf("not due %v", got)
	}
	var comps []string
	for _, c := range rep.Components {
		comps = append(comps, c.Name+" "+c.Action+" "+c.Result)
	}
	wantComps := []string{"etcd reloaded healthy", "kube-apiserver reloaded healthy", "kube-controller-manager restarted healthy", "kube-scheduler restarted healthy"}
	if !reflect.DeepEqual(comps, wantComps) || rep.Error != "" || len(rep.Pending) != 0 {
		t.Errorf("components %q (want %q), error %q, pending %v", comps, wantComps, rep.Error, rep.Pending)
	}
	// The run ends, and each restart is followed, only once the restarted
	// component leads again.
	for _, comp := range []string{"kube-controller-manager", "kube-scheduler"} {
		if !strings.Contains(r.Stdout, "[certs-renewal] "+comp+" leads (") {
			t.Errorf("the run did not wait for %s to lead", comp)
		}
	}
	// Exactly the due files changed (and the backup and status appeared).
	changed := diffDigests(before, treeDigest(t, kubeDir))
	var changedFiles []string
	for _, c := range changed {
		if !strings.HasPrefix(c, "tmp") {
			changedFiles = append(changedFiles, c)
		}
	}
	wantChanged := []string{"admin.conf", "controller-manager.conf", "pki/apiserver-etcd-client.crt", "pki/apiserver-etcd-client.key",
		"pki/apiserver-kubelet-client.crt", "pki/apiserver-kubelet-client.key", "pki/apiserver.crt", "pki/apiserver.key",
		"pki/etcd/server.crt", "pki/etcd/server.key", "pki/front-proxy-client.crt", "pki/front-proxy-client.key", "scheduler.conf"}
	if !reflect.DeepEqual(changedFiles, wantChanged) {
		t.Errorf("changed %v\nwant    %v", changedFiles, wantChanged)
	}
	for _, c := range rep.Renewed {
		if left := time.Until(c.NewExpirationDate.Time); left < 364*24*time.Hour {
			t.Errorf("%s renewed for %v only", c.Name, left)
		}
	}
	after := containerRestarts(t, n)
	for comp, want := range map[string]int{"etcd": 0, "kube-apiserver": 0, "kube-controller-manager": 1, "kube-scheduler": 1} {
		if after[comp]-restarts[comp] != want {
			t.Errorf("%s restarted %d times, want %d", comp, after[comp]-restarts[comp], want)
		}
	}
	nodeReady(t, n, "node1", 10*time.Second)
	// The API server serves its renewed certificate.
	served := mustRun(t, n, "kubeadm", "certs", "check-expiration", "-o", "json")
	var exp struct {
		Certificates []struct {
			Name         string `json:"name"`
			ResidualTime int64  `json:"residualTime"`
		} `json:"certificates"`
	}
	if err := json.Unmarshal([]byte(served), &exp); err != nil {
		t.Fatal(err)
	}
	for _, c := range exp.Certificates {
		if c.ResidualTime < int64(300*24*time.Hour/time.Second) {
			t.Errorf("%s: %ds left after the renewal", c.Name, c.ResidualTime)
		}
	}

	t.Run("a second run renews nothing", func(t *testing.T) {
		before := treeDigest(t, pkiDir)
		confs := treeDigest(t, kubeDir)
		restarts := containerRestarts(t, n)
		r := run(t, n, argv[0], argv[1:]...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Nothing expires within 2160h0m0s: no certificate renewed") {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if d := diffDigests(before, treeDigest(t, pkiDir)); len(d) > 0 {
			t.Errorf("changed %v", d)
		}
		if d := diffDigests(confs, treeDigest(t, kubeDir)); len(d) > 0 {
			t.Errorf("changed %v", d)
		}
		if after := containerRestarts(t, n); !reflect.DeepEqual(after, restarts) {
			t.Errorf("restarts %v, before %v", after, restarts)
		}
		check := mustRun(t, n, "kubeadm", "certs", "check-expiration")
		if !strings.Contains(check, ", renewed 0, succeeded\n") {
			t.Errorf("check-expiration:\n%s", check)
		}
	})

	t.Run("without a kubeconfig to read the Leases with the restarts go on without the wait", func(t *testing.T) {
		// Everything is due with this window; the Leases cannot be read
		// through a kubeconfig that is not there (as on a node whose
		// admin.conf was removed).
		r := run(t, n, argv[0], append(argv[1:], "--within", "17520h", "--kubeconfig", "/etc/kubernetes/absent.conf")...)
		t.Logf("took %v:\n%s%s", r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
		if r.Code != 0 {
			t.Fatalf("exit %d", r.Code)
		}
		for _, comp := range []string{"kube-controller-manager", "kube-scheduler"} {
			if !strings.Contains(r.Stdout, "[certs-renewal] WARNING: not waiting for "+comp+" to lead, as its Lease cannot be read: ") {
				t.Errorf("no warning that %s's Lease cannot be read", comp)
			}
		}
		if rep := renewalStatus(t, n); rep.Error != "" || len(rep.Pending) != 0 || len(rep.Components) != 4 {
			t.Errorf("status: error %q, pending %v, components %+v", rep.Error, rep.Pending, rep.Components)
		}
		nodeReady(t, n, "node1", time.Minute)
	})

	t.Run("without the CA key nothing is renewed and the run fails naming what expires", func(t *testing.T) {
		if err := os.Rename(filepath.Join(pkiDir, "ca.key"), filepath.Join(n.Dir, "ca.key")); err != nil {
			t.Fatal(err)
		}
		before := treeDigest(t, kubeDir)
		// A window longer than the year the certificates now have.
		r := run(t, n, argv[0], append(argv[1:], "--within", "9000h")...)
		if r.Code == 0 {
			t.Fatalf("exit 0\n%s%s", r.Stdout, r.Stderr)
		}
		for _, name := range []string{"admin.conf (expires ", "apiserver (expires ", "apiserver-kubelet-client (expires ", "controller-manager.conf (expires ", "scheduler.conf (expires ", "super-admin.conf (expires "} {
			if !strings.Contains(r.Stderr, name) {
				t.Errorf("not named: %q\n%s", name, r.Stderr)
			}
		}
		if !strings.Contains(r.Stderr, "key of their CA is not on this node (external CA), so nothing was renewed") {
			t.Errorf("stderr:\n%s", r.Stderr)
		}
		var changed []string
		for _, c := range diffDigests(before, treeDigest(t, kubeDir)) {
			if c != "tmp" && !strings.HasPrefix(c, "tmp/") {
				changed = append(changed, c)
			}
		}
		if len(changed) > 0 {
			t.Errorf("changed %v", changed)
		}
		if err := os.Rename(filepath.Join(n.Dir, "ca.key"), filepath.Join(pkiDir, "ca.key")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("reset removes the timer", func(t *testing.T) {
		mustRun(t, n, "kubeadm", "reset", "--force")
		for _, p := range []string{service, n.HostPath("/etc/systemd/system/" + certrenewal.UnitName + ".timer"), n.HostPath(certrenewal.StatusPath)} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s: %v", p, err)
			}
		}
	})
}

// execStart reads the command line of a systemd service's ExecStart.
func execStart(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ExecStart="); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("%s has no ExecStart", path)
	return nil
}

// renewalStatus reads the report the latest renewal run left on the node.
func renewalStatus(t *testing.T, n *testbed.Node) *certrenewal.Report {
	t.Helper()
	data, err := os.ReadFile(n.HostPath(certrenewal.StatusPath))
	if err != nil {
		t.Fatal(err)
	}
	rep := &certrenewal.Report{}
	if err := json.Unmarshal(data, rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func certNames(cs []certrenewal.CertReport) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// containerRestarts maps each control-plane Pod's container to its
// restart count, as the kubelet reports it.
func containerRestarts(t *testing.T, n *testbed.Node) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		var count int
		// The mirror Pod's status lags the container by a relist.
		eventually(t, 30*time.Second, comp+" running", func() error {
			r := kubectlTry(t, n, "-n", "kube-system", "get", "pod", comp+"-node1", "-o", `jsonpath={.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}`)
			if r.err != nil {
				return r.err
			}
			var ready string
			if _, err := fmt.Sscan(r.out, &count, &ready); err != nil {
				return err
			}
			return expectOutput(tryResult{out: ready}, "true")
		})
		out[comp] = count
	}
	return out
}

// apiLoop runs kubectl against the API server until stopped, checking the
// node is Ready each time.
type apiLoop struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	tries    int
	failures []string
	// slowest is the longest call, made at slowestAt; slow lists the
	// calls that took more than 3 s.
	slowest   time.Duration
	slowestAt time.Time
	slow      []string
}

func startAPILoop(t *testing.T, n *testbed.Node) *apiLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &apiLoop{cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for ctx.Err() == nil {
			cmd := n.Command(context.Background(), "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf", "get", "node", "node1",
				"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			start := time.Now()
			b, err := cmd.CombinedOutput()
			l.tries++
			took := time.Since(start)
			if took > l.slowest {
				l.slowest, l.slowestAt = took, start
			}
			if took > 3*time.Second {
				l.slow = append(l.slow, fmt.Sprintf("%s took %v", start.Format("15:04:05.0"), took.Round(100*time.Millisecond)))
			}
			if err != nil || strings.TrimSpace(string(b)) != "True" {
				l.failures = append(l.failures, start.Format("15:04:05.000")+": "+strings.TrimSpace(string(b))+" "+errString(err))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return l
}

func (l *apiLoop) stop() (int, []string) {
	l.cancel()
	l.wg.Wait()
	return l.tries, l.failures
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
