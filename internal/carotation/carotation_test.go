package carotation

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

func TestPrepare(t *testing.T) {
	cfg, l := testNode(t)
	before := pkitest.Files(t, l.CertDir)
	var out bytes.Buffer
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, pki.Options{Now: testNow}, true, &out); err != nil {
		t.Fatal(err)
	}
	if got := changed(before, pkitest.Files(t, l.CertDir)); len(got) > 0 || !strings.Contains(out.String(), "Would make a new Kubernetes cluster CA") ||
		!strings.Contains(out.String(), "Would make a new service-account signing key in "+filepath.Join(l.CertDir, "rotate-ca/sa.key")) {
		t.Fatalf("dry run changed %v\n%s", got, out.String())
	}
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"rotate-ca/ca.crt", "rotate-ca/ca.key", "rotate-ca/etcd/ca.crt", "rotate-ca/etcd/ca.key", "rotate-ca/front-proxy-ca.crt", "rotate-ca/front-proxy-ca.key", "rotate-ca/sa.key"}
	if got := changed(before, pkitest.Files(t, l.CertDir)); !reflect.DeepEqual(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	for _, ca := range Rotated(nil) {
		s, err := ReadCA(l.CertDir, ca)
		if err != nil {
			t.Fatal(err)
		}
		if s.Next == nil || !s.Next.IsCA || s.Next.Subject.String() != s.Signer.Subject.String() || pki.PublicKeysEqual(s.Next.PublicKey, s.Signer.PublicKey) {
			t.Errorf("%s: new CA %v", ca.Name, s.Next)
		}
		if alg, _ := pki.KeyAlgorithmOf(s.NextKey.Public()); alg != "ECDSA-P256" {
			t.Errorf("%s: new key %s", ca.Name, alg)
		}
		if err := s.Next.CheckSignatureFrom(s.Next); err != nil {
			t.Errorf("%s: not self-signed: %v", ca.Name, err)
		}
	}
	sa, err := ReadSA(l.CertDir)
	if err != nil || sa.Next == nil || pki.PublicKeysEqual(sa.Next.Public(), sa.Key.Public()) {
		t.Fatalf("new service-account key: %v", err)
	}
	if alg, _ := pki.KeyAlgorithmOf(sa.Next.Public()); alg != "ECDSA-P256" {
		t.Errorf("new service-account key %s", alg)
	}
	if fi, err := os.Stat(sa.NextPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", sa.NextPath, fi.Mode(), err)
	}
	// Again: nothing changes.
	done := pkitest.Files(t, l.CertDir)
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &out); err != nil {
		t.Fatal(err)
	}
	if got := changed(done, pkitest.Files(t, l.CertDir)); len(got) > 0 {
		t.Errorf("second run changed %v", got)
	}
	// Killed between the key and the certificate: the key is kept.
	os.Remove(filepath.Join(l.CertDir, "rotate-ca/ca.crt"))
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &out); err != nil {
		t.Fatal(err)
	}
	s, err := ReadCA(l.CertDir, Rotated(nil)[0])
	if err != nil || s.Next == nil {
		t.Fatalf("%v %v", s, err)
	}
	if got := changed(done, pkitest.Files(t, l.CertDir)); !reflect.DeepEqual(got, []string{"rotate-ca/ca.crt"}) {
		t.Errorf("after a crash changed %v", got)
	}
}

func TestPrepareExternalCA(t *testing.T) {
	cfg, l := testNode(t)
	os.Remove(pki.KeyPath(l.CertDir, "front-proxy-ca"))
	err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "front-proxy-ca.key) is not on this node") {
		t.Fatalf("got %v", err)
	}
}

// trustNode is a control-plane node after prepare, with its fakes.
func trustNode(t *testing.T) (Layout, *fakeCluster, *fakeComponents, *ControlPlane, *bytes.Buffer) {
	t.Helper()
	cfg, l := testNode(t)
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCluster(t, l)
	comps := &fakeComponents{cluster: fc, fail: map[string]error{}}
	out := &bytes.Buffer{}
	p := &ControlPlane{Layout: l, Client: fc.client, Components: comps, RestartKubelet: comps.kubelet, Out: out, Timeout: 2e9, Interval: 1e6,
		Cfg: &cfg.ClusterConfiguration, KeyOptions: testOptions(), Renewal: &fakeRenewal{fail: map[string]error{}},
		Kubelet: kubeletCert(l, fc.client, comps.kubelet, out)}
	return l, fc, comps, p, out
}

func TestTrustControlPlane(t *testing.T) {
	l, fc, comps, p, out := trustNode(t)
	ctx := context.Background()
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	front, _ := ReadCA(l.CertDir, Rotated(nil)[1])
	both := certsOf(cluster.Signer, cluster.Next)

	before := pkitest.Files(t, l.KubernetesDir)
	p.DryRun = true
	if err := p.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	p.DryRun = false
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 || len(comps.log) > 0 {
		t.Fatalf("dry run changed %v, restarted %v", got, comps.log)
	}
	for _, want := range []string{"Would write " + pki.CertPath(l.CertDir, "ca") + " (trust bundle of the Kubernetes cluster CA)", "Would restart kube-controller-manager", "Would restart kubelet",
		"Would write " + filepath.Join(l.CertDir, "sa.pub") + " (the service-account public keys: the current and the new one)", "Would restart kube-apiserver"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run did not say %q:\n%s", want, out.String())
		}
	}

	if err := p.Trust(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	wantChanged := []string{"admin.conf", "controller-manager.conf", "kubelet.conf", "manifests/kube-controller-manager.yaml",
		"pki/ca.crt", "pki/etcd/ca.crt", "pki/front-proxy-ca.crt", "pki/rotate-ca/signer.crt", "pki/rotate-ca/signer.key", "pki/sa.pub", "scheduler.conf", "super-admin.conf"}
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); !reflect.DeepEqual(got, wantChanged) {
		t.Errorf("changed %v\nwant    %v", got, wantChanged)
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "ca")); !got.Equal(both) {
		t.Errorf("ca.crt holds %s", serials(got))
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "front-proxy-ca")); !got.Equal(certsOf(front.Signer, front.Next)) {
		t.Errorf("front-proxy-ca.crt holds %s", serials(got))
	}
	etcdCA, _ := ReadCA(l.CertDir, Rotated(nil)[2])
	if got := mustBundle(t, pki.CertPath(l.CertDir, "etcd/ca")); !got.Equal(certsOf(etcdCA.Signer, etcdCA.Next)) {
		t.Errorf("etcd/ca.crt holds %s", serials(got))
	}
	if got := mustBundle(t, filepath.Join(l.Dir(), "signer.crt")); !got.Equal(certsOf(cluster.Signer)) {
		t.Errorf("signer.crt holds %s", serials(got))
	}
	for _, k := range kubeconfigReaders {
		if k.file == cis.ApproverKubeconfigFile {
			continue // only under the CISHardening profile: TestApproverKubeconfigRotated
		}
		if got, err := kubeconfigCAs(filepath.Join(l.KubernetesDir, k.file)); err != nil || !got.Equal(both) {
			t.Errorf("%s trusts %s %v", k.file, serials(got), err)
		}
	}
	m, _ := os.ReadFile(filepath.Join(l.ManifestDir, "kube-controller-manager.yaml"))
	wantManifest := strings.NewReplacer("--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt", "--cluster-signing-cert-file=/etc/kubernetes/pki/rotate-ca/signer.crt",
		"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key", "--cluster-signing-key-file=/etc/kubernetes/pki/rotate-ca/signer.key").Replace(kcmManifest)
	if string(m) != wantManifest {
		t.Errorf("manifest:\n%s", m)
	}
	sa, _ := ReadSA(l.CertDir)
	if len(sa.Accepted) != 2 || !pki.PublicKeysEqual(sa.Accepted[0], sa.Key.Public()) || !pki.PublicKeysEqual(sa.Accepted[1], sa.Next.Public()) {
		t.Errorf("sa.pub lists %d keys, want the current then the new one", len(sa.Accepted))
	}
	if fi, _ := os.Stat(sa.PubPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("sa.pub mode %v", fi.Mode())
	}
	// etcd first, then the API server (etcd/ca.crt and sa.pub: once),
	// each healthy before the next; then the API server's clients.
	if want := []string{"restart etcd", "restart kube-apiserver", "replaced kube-controller-manager c1", "restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	cm, _ := fc.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	info, _ := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	if got, _ := ParseBundle(info.Clusters[""].CertificateAuthorityData); !got.Equal(both) {
		t.Errorf("cluster-info trusts %s", serials(got))
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "pending-restarts")); !os.IsNotExist(err) {
		t.Errorf("pending-restarts left: %v", err)
	}

	// Again: nothing changes, nothing restarts.
	done := pkitest.Files(t, l.KubernetesDir)
	comps.log = nil
	if err := p.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if got := changed(done, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 || len(comps.log) > 0 {
		t.Errorf("second run changed %v, restarted %v", got, comps.log)
	}
}

// A restart that fails leaves the restarts still owed recorded; the next
// run makes them, though no file changes any more.
func TestTrustResumesRestarts(t *testing.T) {
	l, _, comps, p, out := trustNode(t)
	ctx := context.Background()
	comps.fail[Scheduler] = errDown
	err := p.Trust(ctx)
	if err == nil || !errors.Is(err, errDown) || !strings.Contains(err.Error(), "kube-scheduler did not come back") {
		t.Fatalf("got %v", err)
	}
	pend, _ := os.ReadFile(filepath.Join(l.Dir(), "pending-restarts"))
	if string(pend) != "kube-scheduler\nkubelet\n" {
		t.Errorf("pending-restarts %q", pend)
	}
	done := pkitest.Files(t, l.KubernetesDir)
	delete(comps.fail, Scheduler)
	comps.log = nil
	if err := p.Trust(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := []string{"restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	if got := changed(done, pkitest.Files(t, l.KubernetesDir)); !reflect.DeepEqual(got, []string{"pki/rotate-ca/pending-restarts (removed)"}) {
		t.Errorf("changed %v", got)
	}
}

// Killed after some files were written and before the pending list was
// cleared: the next run writes the rest and restarts the controller
// manager through the runtime (its manifest no longer changes).
func TestTrustAfterCrash(t *testing.T) {
	l, _, comps, p, _ := trustNode(t)
	ctx := context.Background()
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	both := certsOf(cluster.Signer, cluster.Next)
	if err := pendingPath(l.Dir()).write([]string{ControllerManager, Kubelet}); err != nil {
		t.Fatal(err)
	}
	if _, err := setSigningFlags(filepath.Join(l.ManifestDir, "kube-controller-manager.yaml"), "rotate-ca/signer.crt", "rotate-ca/signer.key", false); err != nil {
		t.Fatal(err)
	}
	if _, err := writeBundle(pki.CertPath(l.CertDir, "ca"), both, false); err != nil {
		t.Fatal(err)
	}
	if err := p.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"restart etcd", "restart kube-apiserver", "restart kube-controller-manager", "restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
}

func TestTrustNeedsPrepare(t *testing.T) {
	_, l := testNode(t)
	p := &ControlPlane{Layout: l, Out: &bytes.Buffer{}}
	if err := p.Trust(context.Background()); err == nil || !strings.Contains(err.Error(), "run the prepare phase first") {
		t.Fatalf("got %v", err)
	}
}

// With an external etcd kubeadm holds no etcd CA key: prepare makes no
// new etcd CA, and trust leaves etcd/ca.crt and etcd alone; the API
// server restarts for sa.pub alone.
func TestTrustExternalEtcd(t *testing.T) {
	cfg, l := testNode(t)
	cfg.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://etcd:2379"}}}
	os.Remove(pki.KeyPath(l.CertDir, "etcd/ca")) // the user's etcd CA: no key here
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), "etcd")); !os.IsNotExist(err) {
		t.Errorf("prepare made a new etcd CA: %v", err)
	}
	fc := newFakeCluster(t, l)
	comps := &fakeComponents{cluster: fc, fail: map[string]error{}}
	out := &bytes.Buffer{}
	p := &ControlPlane{Layout: l, Client: fc.client, Components: comps, RestartKubelet: comps.kubelet, Out: out, Timeout: 2e9, Interval: 1e6,
		Cfg: &cfg.ClusterConfiguration, KeyOptions: testOptions(), Kubelet: kubeletCert(l, fc.client, comps.kubelet, out)}
	before, _ := os.ReadFile(pki.CertPath(l.CertDir, "etcd/ca"))
	if err := p.Trust(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if after, _ := os.ReadFile(pki.CertPath(l.CertDir, "etcd/ca")); !bytes.Equal(before, after) {
		t.Error("trust changed etcd/ca.crt")
	}
	if want := []string{"restart kube-apiserver", "replaced kube-controller-manager c1", "restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
}

func TestTrustWaitsForPublication(t *testing.T) {
	_, _, comps, p, _ := trustNode(t)
	comps.cluster = &fakeCluster{client: comps.cluster.client, l: Layout{CertDir: t.TempDir()}} // publishes nothing new
	p.Timeout = 50e6
	err := p.Trust(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the new CAs were not published within") || !strings.Contains(err.Error(), "kube-root-ca.crt ca.crt lacks CA 2 of 2") {
		t.Fatalf("got %v", err)
	}
}

func TestSigningFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.yaml")
	os.WriteFile(path, []byte(kcmManifest), 0o600)
	if ch, err := setSigningFlags(path, "rotate-ca/signer.crt", "rotate-ca/signer.key", false); !ch || err != nil {
		t.Fatal(ch, err)
	}
	if ch, err := setSigningFlags(path, "rotate-ca/signer.crt", "rotate-ca/signer.key", false); ch || err != nil {
		t.Fatal("again:", ch, err)
	}
	if ch, err := setSigningFlags(path, "ca.crt", "ca.key", false); !ch || err != nil {
		t.Fatal(ch, err)
	}
	if got, _ := os.ReadFile(path); string(got) != kcmManifest {
		t.Errorf("back:\n%s", got)
	}
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Pod\n"), 0o600)
	if _, err := setSigningFlags(path, "ca.crt", "ca.key", false); err == nil {
		t.Error("a manifest without the flags was accepted")
	}
}

func TestTrustWorker(t *testing.T) {
	_, l := testNode(t)
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	next, _ := pki.NewPrivateKey("ECDSA-P256")
	nextCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", Validity: 1e18}, next, testNow())
	conf, caFile := filepath.Join(l.KubernetesDir, "kubelet.conf"), pki.CertPath(l.CertDir, "ca")
	listed := certsOf(cluster.Signer)
	var asked Bundle
	restarts := 0
	out := &bytes.Buffer{}
	w := &Worker{KubeletConf: conf, CAFile: caFile, StateDir: l.Dir(), Out: out,
		ClusterInfo: func(_ context.Context, server string, cas Bundle) (Bundle, error) {
			asked = cas
			return listed, nil
		},
		RestartKubelet: func(context.Context) error { restarts++; return nil },
	}
	fc := newFakeCluster(t, l)
	w.Kubelet = kubeletCert(l, fc.client, w.RestartKubelet, out)
	ctx := context.Background()
	// Before the control-plane nodes: nothing to do.
	before := pkitest.Files(t, l.KubernetesDir)
	if err := w.Trust(ctx); err != nil || restarts != 0 || len(changed(before, pkitest.Files(t, l.KubernetesDir))) > 0 || !strings.Contains(out.String(), "run this phase on the control-plane nodes first") {
		t.Fatalf("%v, %d restarts\n%s", err, restarts, out)
	}
	listed = certsOf(cluster.Signer, nextCA)
	if err := w.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if !asked.Equal(certsOf(cluster.Signer)) || restarts != 1 {
		t.Errorf("asked trusting %s, %d restarts", serials(asked), restarts)
	}
	if got := mustBundle(t, caFile); !got.Equal(listed) {
		t.Errorf("ca.crt %s", serials(got))
	}
	if got, _ := kubeconfigCAs(conf); !got.Equal(listed) {
		t.Errorf("kubelet.conf %s", serials(got))
	}
	if n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{}); n.Annotations[TrustedAnnotation] != bootstraptoken.CACertHash(cluster.Signer)+","+bootstraptoken.CACertHash(nextCA) {
		t.Errorf("the Node records trusting %q", n.Annotations[TrustedAnnotation])
	}
	if want := []string{"kubelet.conf", "pki/ca.crt"}; !reflect.DeepEqual(changed(before, pkitest.Files(t, l.KubernetesDir)), want) {
		t.Errorf("changed %v", changed(before, pkitest.Files(t, l.KubernetesDir)))
	}
	done := pkitest.Files(t, l.KubernetesDir)
	if err := w.Trust(ctx); err != nil || restarts != 1 || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 0 {
		t.Errorf("again: %v, %d restarts", err, restarts)
	}
}

// A rewritten file keeps its owner and mode (a rootless control plane's
// components own the files they read), and a copy takes its source's.
func TestRewriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	_, l := testNode(t)
	conf := filepath.Join(l.KubernetesDir, "controller-manager.conf")
	key := pki.KeyPath(l.CertDir, "ca")
	for _, p := range []string{conf, key} {
		if err := os.Chown(p, 2001, 2002); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o640)
	}
	cas, _ := kubeconfigCAs(conf)
	extra, _ := ReadBundle(pki.CertPath(l.CertDir, "front-proxy-ca"))
	if _, err := setKubeconfigCAs(conf, append(cas, extra...), false); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(l.Dir(), "signer.key")
	if _, err := copyFile(key, to, nil, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{conf, to} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 2001 || st.Gid != 2002 || fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: owner %d:%d mode %v", p, st.Uid, st.Gid, fi.Mode())
		}
	}
}

func TestStatus(t *testing.T) {
	cfg, l := testNode(t)
	if got := Status(nil, l.CertDir, l.KubernetesDir); got != nil {
		t.Fatalf("no rotation: %q", got)
	}
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ca: the old CA signs, the new CA is not trusted yet (phase trust); signed by the new CA: none; by the old CA: admin.conf, apiserver, apiserver-kubelet-client, controller-manager.conf, kubelet.conf, scheduler.conf, super-admin.conf",
		"front-proxy-ca: the old CA signs, the new CA is not trusted yet (phase trust); signed by the new CA: none; by the old CA: front-proxy-client",
		"etcd-ca: the old CA signs, the new CA is not trusted yet (phase trust); signed by the new CA: none; by the old CA: apiserver-etcd-client, etcd-healthcheck-client, etcd-peer, etcd-server",
		"sa: the old key signs, the new key is not accepted yet (phase trust)",
	}
	if got := Status(nil, l.CertDir, l.KubernetesDir); !reflect.DeepEqual(got, want) {
		t.Errorf("after prepare:\n%q\nwant\n%q", got, want)
	}
	_, _, _, p, _ := trustNode(t)
	if err := p.Trust(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := Status(nil, p.CertDir, p.KubernetesDir); len(got) != 4 || !strings.HasPrefix(got[0], "ca: the old CA signs, both are trusted; signed by the new CA: none; by the old CA: admin.conf,") ||
		got[3] != "sa: the old key signs, both are accepted" {
		t.Errorf("after trust: %q", got)
	}
	// With an external etcd, kubeadm holds no etcd CA key: it is not
	// rotated, nor reported.
	external := &cfg.ClusterConfiguration
	external.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://etcd:2379"}}}
	if got := Status(external, l.CertDir, l.KubernetesDir); len(got) != 3 {
		t.Errorf("external etcd: %q", got)
	}
}

// Trust restarts the Pods of kube-proxy and CoreDNS once the cluster
// trusts the new CA, and waits for their rollout; a second run restarts
// nothing. An addon that is not there is skipped.
func TestTrustRestartsCAClients(t *testing.T) {
	l, fc, _, p, out := trustNode(t)
	ctx := context.Background()
	cs := fc.client.(*fake.Clientset)
	two := int32(2)
	cs.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberAvailable: 2}}, metav1.CreateOptions{})
	cs.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}, metav1.CreateOptions{})

	p.DryRun = true
	if err := p.Trust(ctx); err != nil || !strings.Contains(out.String(), "Would then restart the Pods of kube-proxy and the cluster DNS") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	p.DryRun = false
	if err := p.Trust(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	next, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	want := bootstraptoken.CACertHash(next.Next)
	ds, _ := cs.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{})
	d, _ := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if ds.Spec.Template.Annotations[RestartedForAnnotation] != want || d.Spec.Template.Annotations[RestartedForAnnotation] != want {
		t.Errorf("Pod templates: %v %v", ds.Spec.Template.Annotations, d.Spec.Template.Annotations)
	}
	for _, s := range []string{"Restarting the Pods of DaemonSet kube-system/kube-proxy", "Restarting the Pods of Deployment kube-system/coredns"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("did not say %q:\n%s", s, out)
		}
	}
	cs.ClearActions()
	if err := p.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource != "nodes" {
			t.Errorf("second run: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A rollout that does not complete fails trust, naming the addon; a run
// again does not restart the Pods again.
func TestTrustWaitsForCAClients(t *testing.T) {
	_, fc, _, p, _ := trustNode(t)
	ctx := context.Background()
	cs := fc.client.(*fake.Clientset)
	two := int32(2)
	cs.AppsV1().Deployments("kube-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Replicas: &two}, Status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2}}, metav1.CreateOptions{})
	// Unavailable before: restarted, not waited for.
	cs.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2}}, metav1.CreateOptions{})
	p.Timeout = 200e6
	err := p.Trust(ctx)
	if err == nil || !strings.Contains(err.Error(), "the Pods of Deployment kube-system/coredns were not restarted within") {
		t.Fatalf("got %v", err)
	}
	cs.ClearActions()
	p.Trust(ctx)
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "deployments" {
			t.Errorf("run again restarted the Deployment again")
		}
	}
}

// TestPrepareCISModes: under the CISHardening profile the new CA
// certificates get its mode, 0600, as every certificate of the node
// (kube-bench's 1.1.20 finds them during a rotation).
func TestPrepareCISModes(t *testing.T) {
	cfg, l := testNode(t)
	cfg.FeatureGates = map[string]bool{cis.Gate: true}
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for _, ca := range Rotated(nil) {
		fi, err := os.Stat(pki.CertPath(l.CertDir, nextBase(ca)))
		if err != nil || fi.Mode().Perm() != cis.FileMode {
			t.Errorf("%s: %v %v", nextBase(ca), fi.Mode(), err)
		}
	}
}
