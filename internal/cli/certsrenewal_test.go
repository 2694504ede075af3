package cli

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// noInitSystem is a machine without systemd or OpenRC.
type noInitSystem struct{}

func (noInitSystem) Exists(string) bool { return false }
func (noInitSystem) Run(context.Context, string, ...string) ([]byte, error) {
	return nil, errors.New("no init system")
}

// fakeNode records what a renewal asks of the components; failRestart
// makes the first restart of that component fail.
type fakeNode struct {
	calls       []string
	failRestart string
}

func (n *fakeNode) Restart(_ context.Context, c string) error {
	n.calls = append(n.calls, "restart "+c)
	if c == n.failRestart {
		n.failRestart = ""
		return errors.New("not healthy after 4m0s")
	}
	return nil
}

func (n *fakeNode) Reloaded(_ context.Context, c string, serves *x509.Certificate) error {
	call := "reloaded " + c
	if serves != nil {
		call += " serving " + serves.Subject.CommonName
	}
	n.calls = append(n.calls, call)
	return nil
}

func withNode(env certsEnv, n *fakeNode) certsEnv {
	env.renewal.node = func(context.Context, time.Duration) (certrenewal.Node, func(), error) {
		return n, func() {}, nil
	}
	return env
}

// renewalReport decodes the -o json document of "renew expiring".
func renewalReport(t *testing.T, out string) certrenewal.Report {
	t.Helper()
	var r certrenewal.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	return r
}

func reportNames(cs []certrenewal.CertReport) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// fileBytes reads every file below dirs, by path.
func fileBytes(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				m[p], _ = os.ReadFile(p)
			}
			return nil
		})
	}
	return m
}

// TestCertsRenewExpiring: only what expires within the window is renewed,
// the components using it are handled in order, a second run renews
// nothing, and check-expiration shows the latest run.
func TestCertsRenewExpiring(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	cfg := certsTestTree(t, env, cfgPath)
	// 300 days on, everything has 65 days left but apiserver and
	// scheduler.conf, renewed at day 250.
	later := certsTestNow().Add(250 * 24 * time.Hour)
	apiserver, _ := pki.LookupCert("apiserver")
	if _, err := pki.RenewCert(&cfg.ClusterConfiguration, cfg.CertificatesDir, apiserver, pki.Options{Now: func() time.Time { return later }}); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.RenewKubeconfigCert(&cfg.ClusterConfiguration, filepath.Join(env.kubernetesDir, "scheduler.conf"), cfg.CertificatesDir, pki.Options{Now: func() time.Time { return later }}); err != nil {
		t.Fatal(err)
	}
	now := certsTestNow().Add(300 * 24 * time.Hour)
	env.now = func() time.Time { return now }
	node := &fakeNode{}
	env = withNode(env, node)

	before := fileBytes(t, cfg.CertificatesDir, env.kubernetesDir)
	out, code := runCerts(t, env, "renew", "expiring", "--config", cfgPath, "-o", "json")
	if code != 0 {
		t.Fatalf("code %d:\n%s", code, out)
	}
	rep := renewalReport(t, out)
	wantRenewed := []string{"admin.conf", "apiserver-etcd-client", "apiserver-kubelet-client", "controller-manager.conf",
		"etcd-healthcheck-client", "etcd-peer", "etcd-server", "front-proxy-client", "super-admin.conf"}
	if got := reportNames(rep.Renewed); !reflect.DeepEqual(got, wantRenewed) {
		t.Errorf("renewed %v\nwant %v", got, wantRenewed)
	}
	if got := reportNames(rep.NotDue); !reflect.DeepEqual(got, []string{"apiserver", "scheduler.conf"}) {
		t.Errorf("not due %v", got)
	}
	wantCalls := []string{"reloaded etcd serving node1", "reloaded kube-apiserver", "restart kube-controller-manager"}
	if !reflect.DeepEqual(node.calls, wantCalls) {
		t.Errorf("components %q\nwant %q", node.calls, wantCalls)
	}
	if len(rep.Pending) != 0 || rep.Error != "" || rep.Finished == nil {
		t.Errorf("report %+v", rep)
	}
	after := fileBytes(t, cfg.CertificatesDir, env.kubernetesDir)
	dueFiles := map[string]bool{}
	for _, n := range wantRenewed {
		if c, ok := pki.LookupCert(n); ok {
			dueFiles[pki.CertPath(cfg.CertificatesDir, c.BaseName)] = true
			dueFiles[pki.KeyPath(cfg.CertificatesDir, c.BaseName)] = true
		} else {
			dueFiles[filepath.Join(env.kubernetesDir, n)] = true
		}
	}
	for p, b := range before {
		if changed := !bytes.Equal(after[p], b); changed != dueFiles[p] {
			t.Errorf("%s: changed %v, due %v", p, changed, dueFiles[p])
		}
	}
	for _, c := range rep.Renewed {
		if c.NewExpirationDate == nil || !c.NewExpirationDate.Time.Equal(now.Add(365*24*time.Hour).Truncate(time.Second)) {
			t.Errorf("%s renewed until %v", c.Name, c.NewExpirationDate)
		}
	}
	if _, err := os.Stat(filepath.Join(rep.BackupDir, "pki", "etcd", "server.key")); err != nil {
		t.Errorf("backup: %v", err)
	}

	// Again: nothing is due, nothing changes, nothing restarts.
	node.calls = nil
	out, code = runCerts(t, env, "renew", "expiring", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "Nothing expires within 2160h0m0s") || !strings.HasSuffix(out, "[certs-renewal] Done: 0 renewed, 11 not due\n") || len(node.calls) != 0 {
		t.Errorf("second run: code %d, calls %v:\n%s", code, node.calls, out)
	}
	if again := fileBytes(t, cfg.CertificatesDir, env.kubernetesDir); !reflect.DeepEqual(again, after) {
		t.Error("the second run changed files")
	}
	out, _ = runCerts(t, env, "check-expiration", "--config", cfgPath)
	if !strings.Contains(out, "\nLast renewal run: "+now.Format(time.RFC3339)+", renewed 0, succeeded\n") {
		t.Errorf("check-expiration:\n%s", out)
	}
}

// TestCertsRenewExpiringRollsBack: a component that does not come back
// gets its previous kubeconfig back, and the run fails.
func TestCertsRenewExpiringRollsBack(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	certsTestTree(t, env, cfgPath)
	env.now = func() time.Time { return certsTestNow().Add(300 * 24 * time.Hour) }
	node := &fakeNode{failRestart: "kube-controller-manager"}
	env = withNode(env, node)
	kcm := filepath.Join(env.kubernetesDir, "controller-manager.conf")
	sched := filepath.Join(env.kubernetesDir, "scheduler.conf")
	oldKCM, _ := os.ReadFile(kcm)
	oldSched, _ := os.ReadFile(sched)
	out, code := runCerts(t, env, "renew", "expiring", "--config", cfgPath)
	if code != 1 || !strings.Contains(out, "kube-controller-manager did not come back on its renewed certificates: not healthy after 4m0s; its previous certificates were restored") {
		t.Errorf("code %d:\n%s", code, out)
	}
	wantCalls := []string{"reloaded etcd serving node1", "reloaded kube-apiserver serving kube-apiserver",
		"restart kube-controller-manager", "restart kube-controller-manager"}
	if !reflect.DeepEqual(node.calls, wantCalls) {
		t.Errorf("components %q\nwant %q", node.calls, wantCalls)
	}
	// Its kubeconfig and the scheduler's (not reached) are back.
	if b, _ := os.ReadFile(kcm); !bytes.Equal(b, oldKCM) {
		t.Error("controller-manager.conf was not restored")
	}
	if b, _ := os.ReadFile(sched); !bytes.Equal(b, oldSched) {
		t.Error("scheduler.conf was not restored")
	}
	status, err := certrenewal.ReadStatus(env.renewal.statusPath())
	if err != nil || status == nil || status.Error == "" || len(status.Pending) != 0 {
		t.Errorf("status %+v, %v", status, err)
	}
	// The next run renews the two kubeconfig files again.
	node.calls = nil
	out, code = runCerts(t, env, "renew", "expiring", "--config", cfgPath, "-o", "json")
	rep := renewalReport(t, out)
	if code != 0 || !reflect.DeepEqual(reportNames(rep.Renewed), []string{"controller-manager.conf", "scheduler.conf"}) {
		t.Errorf("next run: code %d, renewed %v", code, reportNames(rep.Renewed))
	}
}

// TestCertsRenewExpiringExternalCA: without the CA key nothing is
// renewed, the due certificates are named and the run fails.
func TestCertsRenewExpiringExternalCA(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cfgPath := certsTestConfig(t, dir, "")
	cfg := certsTestTree(t, env, cfgPath)
	if err := os.Remove(pki.KeyPath(cfg.CertificatesDir, "ca")); err != nil {
		t.Fatal(err)
	}
	env.now = func() time.Time { return certsTestNow().Add(300 * 24 * time.Hour) }
	node := &fakeNode{}
	env = withNode(env, node)
	before := fileBytes(t, cfg.CertificatesDir, env.kubernetesDir)
	out, code := runCerts(t, env, "renew", "expiring", "--config", cfgPath)
	if code != 1 || !strings.Contains(out, "6 certificates expire soon but the key of their CA is not on this node (external CA), so nothing was renewed") ||
		!strings.Contains(out, "apiserver (expires 2027-03-04T05:06:07Z)") || !strings.Contains(out, "admin.conf (expires ") {
		t.Errorf("code %d:\n%s", code, out)
	}
	if after := fileBytes(t, cfg.CertificatesDir, env.kubernetesDir); !reflect.DeepEqual(after, before) {
		t.Error("files changed")
	}
	if len(node.calls) != 0 {
		t.Errorf("components touched: %v", node.calls)
	}
}

// TestCertsRenewExpiringBadWindow: a window that is not positive is a
// validation error.
func TestCertsRenewExpiringBadWindow(t *testing.T) {
	env := certsTestEnv(t.TempDir())
	if out, code := runCerts(t, env, "renew", "expiring", "--within", "0s"); code != 3 || !strings.Contains(out, "--within must be a positive duration") {
		t.Errorf("code %d:\n%s", code, out)
	}
}
