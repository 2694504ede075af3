package certrenewal

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

func testNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

// testTree makes the certificates of a one-node control plane (ECDSA:
// quick) in a temporary folder, valid for a year from testNow.
func testTree(t *testing.T) (*kubeadm.InitConfiguration, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := configtest.ControlPlaneNode()
	cfg.CertificatesDir = filepath.Join(dir, "pki")
	if _, _, err := pki.EnsureAll(context.Background(), cfg, cfg.CertificatesDir, pki.Options{Now: testNow}, 2); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}

// recordingNode records the calls; fail makes the first call for a
// component fail.
type recordingNode struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]bool
}

func (n *recordingNode) call(c string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, c)
	if n.fail[c] {
		n.fail[c] = false
		return errors.New("no answer")
	}
	return nil
}

func (n *recordingNode) Restart(_ context.Context, c string) error { return n.call("restart " + c) }
func (n *recordingNode) Reloaded(_ context.Context, c string, want *x509.Certificate) error {
	s := "reloaded " + c
	if want != nil {
		s += " " + want.SerialNumber.String()
	}
	return n.call(s)
}

func serial(t *testing.T, path string) string {
	t.Helper()
	c, err := pki.LoadCert(path)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}

func TestRenewer(t *testing.T) {
	failingKeys := func() pki.KeyGenerator {
		var mu sync.Mutex
		n := 0
		return func(alg kubeadm.EncryptionAlgorithmType) (crypto.Signer, error) {
			mu.Lock()
			defer mu.Unlock()
			if n++; n > 3 {
				return nil, errors.New("no entropy")
			}
			return pki.NewPrivateKey(alg)
		}
	}
	for _, tc := range []struct {
		name string
		// days after testNow the run happens
		days int
		// pending is what an earlier run left in the status file
		pending []string
		newKey  func() pki.KeyGenerator
		fail    string
		// wantCalls may name "$old" and "$new": the serials of the
		// API server's certificate before and after.
		wantCalls   []string
		wantErr     string
		wantChanged bool
		wantPending []string
	}{
		{
			name: "nothing due", days: 10,
		},
		{
			name: "an earlier run's pending restart is done, though nothing is due", days: 10,
			pending:   []string{"kube-scheduler"},
			wantCalls: []string{"restart kube-scheduler"},
		},
		{
			name: "all due, components in order", days: 300, wantChanged: true,
			wantCalls: []string{"reloaded etcd $etcdnew", "reloaded kube-apiserver $new"},
		},
		{
			name: "a renewal fails: every file is restored, nothing restarted", days: 300,
			newKey: failingKeys, pending: []string{"kube-scheduler"},
			wantErr: "no entropy", wantPending: []string{"kube-scheduler"},
		},
		{
			name: "the API server does not load its certificate: restored and waited for", days: 300,
			fail:        "reloaded kube-apiserver $new",
			wantCalls:   []string{"reloaded etcd $etcdnew", "reloaded kube-apiserver $new", "reloaded kube-apiserver $old"},
			wantErr:     "kube-apiserver did not come back on its renewed certificates: no answer; its previous certificates were restored",
			wantChanged: true, // etcd's files stay renewed
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, dir := testTree(t)
			status := filepath.Join(dir, "status.json")
			if tc.pending != nil {
				if err := writeStatus(status, &Report{Pending: tc.pending}); err != nil {
					t.Fatal(err)
				}
			}
			apiserverCrt := pki.CertPath(cfg.CertificatesDir, "apiserver")
			etcdCrt := pki.CertPath(cfg.CertificatesDir, "etcd/server")
			oldSerial := serial(t, apiserverCrt)
			before := pkitest.Files(t, cfg.CertificatesDir)
			node := &recordingNode{fail: map[string]bool{}}
			now := testNow().Add(time.Duration(tc.days) * 24 * time.Hour)
			var out bytes.Buffer
			r := &Renewer{
				Cfg: &cfg.ClusterConfiguration, CertDir: cfg.CertificatesDir, KubeconfigDir: filepath.Join(dir, "kubernetes"),
				BackupDir: filepath.Join(dir, "backup"), StatusPath: status, Window: DefaultWindow,
				Now: func() time.Time { return now }, Node: node, Out: &out,
			}
			if tc.newKey != nil {
				r.NewKey = tc.newKey()
			}
			// The failure names the serial the renewal will give, not
			// known yet: fail on whatever reload of the API server
			// comes with a new serial.
			if tc.fail != "" {
				r.Node = &serialNode{recordingNode: node, failComponent: "kube-apiserver", old: oldSerial}
			}
			rep, err := r.Run(context.Background())
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q\n%s", err, tc.wantErr, out.String())
			}
			newSerial, etcdSerial := serial(t, apiserverCrt), serial(t, etcdCrt)
			if tc.fail != "" {
				newSerial = r.Node.(*serialNode).seen
			}
			var want []string
			for _, c := range tc.wantCalls {
				want = append(want, strings.NewReplacer("$old", oldSerial, "$new", newSerial, "$etcdnew", etcdSerial).Replace(c))
			}
			if !reflect.DeepEqual(node.calls, want) {
				t.Errorf("calls %q\nwant  %q", node.calls, want)
			}
			after := pkitest.Files(t, cfg.CertificatesDir)
			if changed := !reflect.DeepEqual(after, before); changed != tc.wantChanged {
				t.Errorf("files changed: %v, want %v", changed, tc.wantChanged)
			}
			if tc.fail != "" && after[apiserverCrt] != before[apiserverCrt] {
				t.Error("the API server's certificate was not restored")
			}
			saved, err := ReadStatus(status)
			if err != nil || saved == nil {
				t.Fatalf("status %v %v", saved, err)
			}
			if !reflect.DeepEqual(saved.Pending, tc.wantPending) || !reflect.DeepEqual(rep.Pending, tc.wantPending) {
				t.Errorf("pending %v (status %v), want %v", rep.Pending, saved.Pending, tc.wantPending)
			}
			if (saved.Error == "") != (tc.wantErr == "") || saved.Finished == nil {
				t.Errorf("status %+v", saved)
			}
			doc, _ := json.Marshal(rep)
			if bytes.Contains(doc, []byte("PRIVATE KEY")) {
				t.Error("a key in the report")
			}
		})
	}
}

// serialNode fails the first reload of failComponent that expects a
// serial other than old (the renewed certificate), and remembers it.
type serialNode struct {
	*recordingNode
	failComponent, old, seen string
}

func (n *serialNode) Reloaded(ctx context.Context, c string, want *x509.Certificate) error {
	err := n.recordingNode.Reloaded(ctx, c, want)
	if c == n.failComponent && want != nil && want.SerialNumber.String() != n.old && n.seen == "" {
		n.seen = want.SerialNumber.String()
		return errors.New("no answer")
	}
	return err
}

// TestExternalCA: a due certificate of a CA without its key stops the run
// before anything changes, naming it.
func TestExternalCA(t *testing.T) {
	cfg, dir := testTree(t)
	if err := os.Remove(pki.KeyPath(cfg.CertificatesDir, "front-proxy-ca")); err != nil {
		t.Fatal(err)
	}
	before := pkitest.Files(t, cfg.CertificatesDir)
	node := &recordingNode{}
	r := &Renewer{
		Cfg: &cfg.ClusterConfiguration, CertDir: cfg.CertificatesDir, KubeconfigDir: filepath.Join(dir, "kubernetes"),
		BackupDir: filepath.Join(dir, "backup"), Window: DefaultWindow,
		Now: func() time.Time { return testNow().Add(300 * 24 * time.Hour) }, Node: node, Out: &bytes.Buffer{},
	}
	rep, err := r.Run(context.Background())
	var ext *ExternalCAError
	if !errors.As(err, &ext) || len(ext.Due) != 1 || ext.Due[0].Name != "front-proxy-client" ||
		!strings.Contains(err.Error(), "front-proxy-client (expires 2027-03-04T05:06:07Z)") {
		t.Fatalf("error %v", err)
	}
	if len(rep.Renewed) != 0 || len(rep.ExternallyManaged) != 1 || len(node.calls) != 0 {
		t.Errorf("report %+v, calls %v", rep, node.calls)
	}
	if !reflect.DeepEqual(pkitest.Files(t, cfg.CertificatesDir), before) {
		t.Error("files changed")
	}
	if _, err := os.Stat(r.BackupDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a backup was made: %v", err)
	}
}

// TestConcurrentRunRefused: while a run holds the lock, another fails at
// once and leaves the status alone.
func TestConcurrentRunRefused(t *testing.T) {
	cfg, dir := testTree(t)
	status := filepath.Join(dir, "status.json")
	unlock, err := lockRun(status + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	r := &Renewer{
		Cfg: &cfg.ClusterConfiguration, CertDir: cfg.CertificatesDir, KubeconfigDir: filepath.Join(dir, "kubernetes"),
		BackupDir: filepath.Join(dir, "backup"), StatusPath: status, Window: DefaultWindow,
		Now: func() time.Time { return testNow().Add(300 * 24 * time.Hour) }, Node: &recordingNode{}, Out: &bytes.Buffer{},
	}
	if _, err := r.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "another certificate renewal is running") {
		t.Errorf("error %v", err)
	}
	if _, err := os.Stat(status); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status written: %v", err)
	}
	unlock()
	if _, err := r.Run(context.Background()); err != nil {
		t.Errorf("after the lock was released: %v", err)
	}
}

// Due picks the certificates instead of the window (a CA rotation's
// choice): only those are renewed, whatever their expiry, and only their
// components are made to use them.
func TestRenewerDue(t *testing.T) {
	cfg, dir := testTree(t)
	node := &recordingNode{fail: map[string]bool{}}
	var out bytes.Buffer
	oldServer := serial(t, pki.CertPath(cfg.CertificatesDir, "etcd/server"))
	oldAPI := serial(t, pki.CertPath(cfg.CertificatesDir, "apiserver"))
	r := &Renewer{
		Cfg: &cfg.ClusterConfiguration, CertDir: cfg.CertificatesDir, KubeconfigDir: dir,
		BackupDir: filepath.Join(dir, "backup"), Window: DefaultWindow, Now: testNow, Node: node, Out: &out,
		Due:     func(c pki.ExpirationInfo) (bool, error) { return c.Name == "apiserver", nil },
		DueWhat: "picked",
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rep.Renewed) != 1 || rep.Renewed[0].Name != "apiserver" || serial(t, pki.CertPath(cfg.CertificatesDir, "apiserver")) == oldAPI {
		t.Errorf("renewed %+v", rep.Renewed)
	}
	if serial(t, pki.CertPath(cfg.CertificatesDir, "etcd/server")) != oldServer {
		t.Error("a certificate Due did not pick was renewed")
	}
	if len(node.calls) != 1 || !strings.HasPrefix(node.calls[0], "reloaded kube-apiserver ") {
		t.Errorf("calls %v", node.calls)
	}
	r.Due = func(pki.ExpirationInfo) (bool, error) { return false, nil }
	if _, err := r.Run(context.Background()); err != nil || !strings.Contains(out.String(), "No certificate picked: none renewed") {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// TestRenewerApproverKubeconfig: under the CISHardening profile the
// kubelet serving certificate approver's kubeconfig is renewed like the
// others when due, with no restart (the approver reloads it by itself),
// and a second run renews nothing; a file another user owns (etcd's,
// under the profile) keeps its owner.
func TestRenewerApproverKubeconfig(t *testing.T) {
	cfg, dir := testTree(t)
	cfg.FeatureGates = map[string]bool{cis.Gate: true}
	kdir := filepath.Join(dir, "kubernetes")
	path := cis.ApproverKubeconfig(kdir)
	ca, err := kubeconfig.LoadCAWithKey(cfg.CertificatesDir)
	if err != nil {
		t.Fatal(err)
	}
	is := kubeconfig.Issuer{CA: ca, Validity: 365 * 24 * time.Hour, Algorithm: cfg.KeyAlgorithm(), Now: testNow}
	kc, err := is.Config(kubeconfig.Spec{FileName: cis.ApproverKubeconfigFile, ClusterName: "kubernetes", Server: "https://10.0.0.1:6443", ClientName: "kubeadm:kubelet-serving-approver"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.WriteFile(path, kc); err != nil {
		t.Fatal(err)
	}
	old, err := pki.ReadKubeconfigClientCert(path)
	if err != nil {
		t.Fatal(err)
	}
	etcdKey := pki.KeyPath(cfg.CertificatesDir, "etcd/server")
	owned := os.Geteuid() == 0
	if owned {
		if err := os.Chown(etcdKey, 4242, 4343); err != nil {
			t.Fatal(err)
		}
	}
	node := &recordingNode{}
	now := testNow().Add(300 * 24 * time.Hour)
	var out bytes.Buffer
	r := &Renewer{
		Cfg: &cfg.ClusterConfiguration, CertDir: cfg.CertificatesDir, KubeconfigDir: kdir,
		BackupDir: filepath.Join(dir, "backup"), StatusPath: filepath.Join(dir, "status.json"), Window: DefaultWindow,
		Now: func() time.Time { return now }, Node: node, Out: &out,
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	renewed, err := pki.ReadKubeconfigClientCert(path)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Equal(old) || renewed.CheckSignatureFrom(ca.Cert) != nil || renewed.Subject.CommonName != old.Subject.CommonName || !renewed.NotAfter.After(now) {
		t.Errorf("the approver's certificate was not renewed by the cluster CA: %v %v", renewed.Subject, renewed.NotAfter)
	}
	found := false
	for _, c := range rep.Renewed {
		found = found || (c.Name == cis.ApproverKubeconfigFile && c.UsedBy == "kubeadm-kubelet-serving-approver")
	}
	if !found {
		t.Errorf("the report's renewed list lacks %s: %+v", cis.ApproverKubeconfigFile, rep.Renewed)
	}
	for _, c := range node.calls {
		if strings.Contains(c, "approver") || strings.HasPrefix(c, "restart") {
			t.Errorf("call %q: nothing restarts for the approver's kubeconfig", c)
		}
	}
	if owned {
		fi, err := os.Stat(etcdKey)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4242 || st.Gid != 4343 {
			t.Errorf("etcd's renewed key owned by %d:%d, want 4242:4343", st.Uid, st.Gid)
		}
	}
	out.Reset()
	rep, err = r.Run(context.Background())
	if err != nil || len(rep.Renewed) != 0 {
		t.Errorf("a second run: %v, renewed %+v\n%s", err, rep.Renewed, out.String())
	}

	// Without the cluster CA's key (external CA) it is named with the
	// others, and nothing is renewed.
	if err := os.Remove(pki.KeyPath(cfg.CertificatesDir, "ca")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(365 * 24 * time.Hour)
	_, err = r.Run(context.Background())
	var ext *ExternalCAError
	if !errors.As(err, &ext) || !strings.Contains(err.Error(), cis.ApproverKubeconfigFile+" (expires ") {
		t.Errorf("external CA: %v", err)
	}
}
