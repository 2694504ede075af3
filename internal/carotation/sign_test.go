package carotation

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// signNode is a control-plane node after prepare and trust.
func signNode(t *testing.T) (Layout, *fakeCluster, *fakeComponents, *ControlPlane, *bytes.Buffer) {
	t.Helper()
	l, fc, comps, p, out := trustNode(t)
	if err := p.Trust(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	comps.log = nil
	out.Reset()
	return l, fc, comps, p, out
}

// leaves reads every certificate of the node a rotated CA signs: the
// certificate files, the kubeconfig files' client certificates and the
// kubelet's.
func leaves(t *testing.T, l Layout) map[string]*x509.Certificate {
	t.Helper()
	out := map[string]*x509.Certificate{}
	for _, name := range []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client", "etcd/server", "etcd/peer", "etcd/healthcheck-client", "apiserver-etcd-client"} {
		out[name] = mustCert(t, pki.CertPath(l.CertDir, name))
	}
	for _, f := range []string{"admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf"} {
		c, err := pki.ReadKubeconfigClientCert(filepath.Join(l.KubernetesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = c
	}
	k := &KubeletCert{KubeletConf: filepath.Join(l.KubernetesDir, "kubelet.conf")}
	cred, err := k.read()
	if err != nil {
		t.Fatal(err)
	}
	out["kubelet"] = cred.cert
	return out
}

func mustCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := pki.LoadCert(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func clusterInfoCAs(t *testing.T, fc *fakeCluster) Bundle {
	t.Helper()
	cm, _ := fc.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(context.Background(), bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	info, _ := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
	b, err := ParseBundle(info.Clusters[""].CertificateAuthorityData)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignAndFinish(t *testing.T) {
	l, fc, comps, p, out := signNode(t)
	ctx := context.Background()
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	front, _ := ReadCA(l.CertDir, Rotated(nil)[1])
	etcdCA, _ := ReadCA(l.CertDir, Rotated(nil)[2])
	renewal := p.Renewal.(*fakeRenewal)
	oldSA, _ := ReadSA(l.CertDir)

	before := pkitest.Files(t, l.KubernetesDir)
	p.DryRun = true
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p.DryRun = false
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 || len(comps.log)+len(renewal.log) > 0 {
		t.Fatalf("dry run changed %v, restarted %v %v", got, comps.log, renewal.log)
	}
	for _, want := range []string{"Would write " + pki.KeyPath(l.CertDir, "ca") + " (the key of the new Kubernetes cluster CA)",
		"Would re-issue apiserver with the new CA and have kube-apiserver use it", "Would re-issue admin.conf with the new CA and have its users use it",
		"Would write " + pki.KeyPath(l.CertDir, "etcd/ca") + " (the key of the new etcd CA)",
		"Would re-issue etcd-server with the new CA and have etcd use it", "Would re-issue apiserver-etcd-client with the new CA and have kube-apiserver use it",
		"Would ask the cluster for a kubelet client certificate of the new CA (system:node:node1",
		"Would write " + filepath.Join(l.CertDir, "sa.key") + " (the service-account signing key: the new one)",
		"Would write " + filepath.Join(l.CertDir, "sa.pub") + " (the service-account public keys: the new one first)",
		"Would restart kube-apiserver", "Would record in " + filepath.Join(l.Dir(), "sa-signed")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run did not say %q:\n%s", want, out)
		}
	}

	out.Reset()
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	signed, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	if !signed.Signer.Equal(cluster.Next) || !signed.Trusted.Equal(certsOf(cluster.Next, cluster.Signer)) {
		t.Errorf("ca.crt holds %s, its key is the new one: %v", serials(signed.Trusted), signed.Signer.Equal(cluster.Next))
	}
	if got := mustBundle(t, filepath.Join(l.Dir(), "signer.crt")); !got.Equal(certsOf(cluster.Next)) {
		t.Errorf("signer.crt holds %s", serials(got))
	}
	for name, c := range leaves(t, l) {
		ca := cluster.Next
		switch {
		case name == "front-proxy-client":
			ca = front.Next
		case strings.Contains(name, "etcd"):
			ca = etcdCA.Next
		}
		if err := c.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s not signed by the new CA: %v", name, err)
		}
	}
	if apiserver := mustCert(t, pki.CertPath(l.CertDir, "apiserver")); !strings.Contains(strings.Join(apiserver.DNSNames, ","), "kubernetes.default.svc") {
		t.Errorf("apiserver lost its names: %v", apiserver.DNSNames)
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "etcd/ca")); !got.Equal(certsOf(etcdCA.Next, etcdCA.Signer)) {
		t.Errorf("etcd/ca.crt holds %s", serials(got))
	}
	if got := clusterInfoCAs(t, fc); !got.Equal(certsOf(cluster.Next, cluster.Signer)) {
		t.Errorf("cluster-info lists %s", serials(got))
	}
	// etcd and the API server read their re-issued certificates by
	// themselves, and trust the new etcd CA since trust: no restart.
	if want := []string{"reloaded etcd", "reloaded kube-apiserver", "restart kube-controller-manager", "restart kube-scheduler"}; !reflect.DeepEqual(renewal.log, want) {
		t.Errorf("renewal %v, want %v", renewal.log, want)
	}
	// The API server and the controller manager read sa.key (and the
	// API server sa.pub) only at start.
	if want := []string{"restart kube-apiserver", "restart kube-controller-manager", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	sa, _ := ReadSA(l.CertDir)
	if !sa.nextSigns() || len(sa.Accepted) != 2 || !pki.PublicKeysEqual(sa.Accepted[0], sa.Next.Public()) || !pki.PublicKeysEqual(sa.Accepted[1], oldSA.Key.Public()) {
		t.Errorf("sa.key is the new key: %v; sa.pub lists %d keys, want the new then the old one", sa.nextSigns(), len(sa.Accepted))
	}
	checkModes(t, sa)
	if at, ok, err := l.SASignedAt(); !ok || err != nil || !at.Equal(testNow()) {
		t.Errorf("sa-signed: %v %v %v", at, ok, err)
	}
	n, _ := fc.client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
	if n.Annotations[KubeletClientCAAnnotation] != bootstraptoken.CACertHash(cluster.Next) {
		t.Errorf("Node annotations %v", n.Annotations)
	}
	if got := Status(nil, l.CertDir, l.KubernetesDir); len(got) != 4 || got[3] != "sa: the new key signs since 2026-03-04T05:06:07Z, both are accepted; finish drops the old one from 2026-03-04T06:06:07Z" || got[0] != "ca: the new CA signs, both are trusted; signed by the new CA: admin.conf, apiserver, apiserver-kubelet-client, controller-manager.conf, kubelet.conf, scheduler.conf, super-admin.conf; by the old CA: none" ||
		got[2] != "etcd-ca: the new CA signs, both are trusted; signed by the new CA: apiserver-etcd-client, etcd-healthcheck-client, etcd-peer, etcd-server; by the old CA: none" {
		t.Errorf("status %q", got)
	}

	// Again: nothing changes but the renewal's status file.
	done := pkitest.Files(t, l.KubernetesDir)
	comps.log, renewal.log = nil, nil
	if err := p.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	if got := changed(done, pkitest.Files(t, l.KubernetesDir)); !reflect.DeepEqual(got, []string{"pki/rotate-ca/sign-status.json"}) || len(comps.log)+len(renewal.log) > 0 {
		t.Errorf("second run changed %v, restarted %v %v", got, comps.log, renewal.log)
	}
	// Trust after sign changes nothing either.
	if err := p.Trust(ctx); err != nil || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 1 {
		t.Errorf("trust after sign: %v %v", err, changed(done, pkitest.Files(t, l.KubernetesDir)))
	}

	out.Reset()
	p.DryRun = true
	if err := p.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	p.DryRun = false
	for _, want := range []string{"Would write " + filepath.Join(l.ManifestDir, "kube-controller-manager.yaml"),
		"Would refuse until 2026-03-04T06:06:07Z", "Would write " + filepath.Join(l.CertDir, "sa.pub") + " (the new service-account public key alone)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("finish dry run did not say %q:\n%s", want, out)
		}
	}
	// Within the hour after sign: refused, saying until when.
	done = pkitest.Files(t, l.KubernetesDir)
	p.KeyOptions.Now = func() time.Time { return testNow().Add(59 * time.Minute) }
	err := p.Finish(ctx)
	if err == nil || !strings.Contains(err.Error(), "run finish again after 2026-03-04T06:06:07Z, or drop the old key now with --drop-old-service-account-key-now") {
		t.Fatalf("finish within the hour: %v", err)
	}
	if got := changed(done, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 {
		t.Fatalf("a refused finish changed %v", got)
	}
	p.KeyOptions.Now = func() time.Time { return testNow().Add(time.Hour) }
	comps.log = nil
	if err := p.Finish(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "ca")); !got.Equal(certsOf(cluster.Next)) {
		t.Errorf("ca.crt holds %s", serials(got))
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "front-proxy-ca")); !got.Equal(certsOf(front.Next)) {
		t.Errorf("front-proxy-ca.crt holds %s", serials(got))
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "etcd/ca")); !got.Equal(certsOf(etcdCA.Next)) {
		t.Errorf("etcd/ca.crt holds %s", serials(got))
	}
	for _, k := range kubeconfigReaders {
		if k.file == cis.ApproverKubeconfigFile {
			continue // only under the CISHardening profile: TestApproverKubeconfigRotated
		}
		if got, err := kubeconfigCAs(filepath.Join(l.KubernetesDir, k.file)); err != nil || !got.Equal(certsOf(cluster.Next)) {
			t.Errorf("%s trusts %s %v", k.file, serials(got), err)
		}
	}
	if m, _ := os.ReadFile(filepath.Join(l.ManifestDir, "kube-controller-manager.yaml")); string(m) != kcmManifest {
		t.Errorf("manifest:\n%s", m)
	}
	sa, _ = ReadSA(l.CertDir)
	if len(sa.Accepted) != 1 || !pki.PublicKeysEqual(sa.Accepted[0], sa.Key.Public()) || !pki.PublicKeysEqual(sa.Key.Public(), oldSA.Next.Public()) {
		t.Errorf("sa.pub lists %d keys, want the new one alone", len(sa.Accepted))
	}
	checkModes(t, sa)
	if got := clusterInfoCAs(t, fc); !got.Equal(certsOf(cluster.Next)) {
		t.Errorf("cluster-info lists %s", serials(got))
	}
	cms, _ := fc.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	for _, cm := range cms.Items {
		for key, want := range map[string]Bundle{"ca.crt": {cluster.Next}, "client-ca-file": {cluster.Next}, "requestheader-client-ca-file": {front.Next}} {
			if _, ok := cm.Data[key]; ok {
				if err := holdsOnly(cm, key, want); err != nil {
					t.Error(err)
				}
			}
		}
	}
	if want := []string{"restart etcd", "restart kube-apiserver", "replaced kube-controller-manager c1", "restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", l.Dir(), err)
	}
	n, _ = fc.client.CoreV1().Nodes().Get(ctx, "node1", metav1.GetOptions{})
	if len(n.Annotations) > 0 {
		t.Errorf("Node annotations left: %v", n.Annotations)
	}
	if got := Status(nil, l.CertDir, l.KubernetesDir); got != nil {
		t.Errorf("status after finish %q", got)
	}
	// Again: nothing to finish.
	done = pkitest.Files(t, l.KubernetesDir)
	if err := p.Finish(ctx); err != nil || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 0 {
		t.Errorf("second finish: %v %v", err, changed(done, pkitest.Files(t, l.KubernetesDir)))
	}
}

// Killed between the new key and the reordered bundle: the next run
// finishes the swap.
func TestSignAfterCrash(t *testing.T) {
	l, _, _, p, out := signNode(t)
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	if _, err := copyFile(pki.KeyPath(l.CertDir, "rotate-ca/ca"), pki.KeyPath(l.CertDir, "ca"), nil, false); err != nil {
		t.Fatal(err)
	}
	mid, err := ReadCA(l.CertDir, Rotated(nil)[0])
	if err != nil || !mid.Signer.Equal(cluster.Next) {
		t.Fatalf("half-swapped CA: %v", err)
	}
	if err := p.Sign(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := mustBundle(t, pki.CertPath(l.CertDir, "ca")); !got.Equal(certsOf(cluster.Next, cluster.Signer)) {
		t.Errorf("ca.crt holds %s", serials(got))
	}
}

// Killed between the new sa.key and the reordered sa.pub, before the
// restarts: the next run reorders sa.pub, makes the restarts owed and
// records when the new key began to sign; killed after the restarts and
// before the record, the next run records a later time, restarting
// nothing.
func TestSignSAKeyAfterCrash(t *testing.T) {
	l, _, comps, p, out := signNode(t)
	ctx := context.Background()
	sa, _ := ReadSA(l.CertDir)
	if err := pendingPath(l.Dir()).write([]string{APIServer, ControllerManager}); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.useNextKey(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, _ := ReadSA(l.CertDir)
	if !got.nextSigns() || len(got.Accepted) != 2 || !pki.PublicKeysEqual(got.Accepted[0], sa.Next.Public()) {
		t.Errorf("sa.pub lists %d keys, the new one first: %v", len(got.Accepted), len(got.Accepted) > 0 && pki.PublicKeysEqual(got.Accepted[0], sa.Next.Public()))
	}
	if want := []string{"restart kube-apiserver", "restart kube-controller-manager", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	os.Remove(filepath.Join(l.Dir(), "sa-signed"))
	later := testNow().Add(10 * time.Minute)
	p.KeyOptions.Now = func() time.Time { return later }
	comps.log = nil
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if at, ok, _ := l.SASignedAt(); !ok || !at.Equal(later) || len(comps.log) > 0 {
		t.Errorf("sa-signed %v %v, restarts %v", at, ok, comps.log)
	}
	// Finish refuses without the record, which sign makes.
	os.Remove(filepath.Join(l.Dir(), "sa-signed"))
	if err := p.Finish(ctx); err == nil || !strings.Contains(err.Error(), "no record of when the new service-account key began to sign") {
		t.Errorf("finish without sa-signed: %v", err)
	}
}

// A rotation whose sign ran with a kubeadm that did not rotate the
// service-account key (sa.key and sa.pub untouched): trust, run again,
// makes the API server accept the new key, and sign then makes it sign.
func TestTrustSAKeyAfterCASign(t *testing.T) {
	l, _, comps, p, out := signNode(t)
	ctx := context.Background()
	old, _ := os.ReadFile(filepath.Join(l.CertDir, "sa.key"))
	oldSA, _ := ReadSA(l.CertDir)
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(l.CertDir, "sa.key"), old, 0o600)
	if _, err := (&SAState{PubPath: filepath.Join(l.CertDir, "sa.pub")}).writePublicKeys([]crypto.PublicKey{oldSA.Key.Public()}, false); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(l.Dir(), "sa-signed"))
	if err := p.Sign(ctx); err == nil || !strings.Contains(err.Error(), "does not list the new service-account key yet: run the trust phase first") {
		t.Fatalf("sign before trusting the key: %v", err)
	}
	comps.log = nil
	if err := p.Trust(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := []string{"restart kube-apiserver"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if sa, _ := ReadSA(l.CertDir); !sa.nextSigns() || len(sa.Accepted) != 2 {
		t.Errorf("the new key signs: %v, sa.pub lists %d keys", sa.nextSigns(), len(sa.Accepted))
	}
}

// Told to, finish drops the old service-account key within the hour;
// killed after writing sa.pub and before the API server's restart, the
// next run makes the restart.
func TestFinishDropsOldSAKeyWhenTold(t *testing.T) {
	l, _, comps, p, out := signNode(t)
	ctx := context.Background()
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p.DropOldServiceAccountKey = true
	p.KeyOptions.Now = func() time.Time { return testNow().Add(5 * time.Minute) }
	comps.fail[APIServer] = errDown
	if err := p.Finish(ctx); err == nil || !strings.Contains(err.Error(), "kube-apiserver did not come back") {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(out.String(), "Dropping the old service-account key 55m0s before 2026-03-04T06:06:07Z, as asked") {
		t.Errorf("finish did not say it drops the key early:\n%s", out)
	}
	if sa, _ := ReadSA(l.CertDir); len(sa.Accepted) != 1 {
		t.Fatalf("sa.pub lists %d keys", len(sa.Accepted))
	}
	delete(comps.fail, APIServer)
	comps.log = nil
	if err := p.Finish(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// etcd restarted in the first run; the API server and the rest are
	// owed.
	if want := []string{"restart kube-apiserver", "restart kube-controller-manager", "restart kube-scheduler", "restart kubelet"}; !reflect.DeepEqual(comps.log, want) {
		t.Errorf("restarts %v, want %v", comps.log, want)
	}
	if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", l.Dir(), err)
	}
}

// Sign waits for every Node to trust the new CA; finish for every Node's
// kubelet to use it.
func TestSignAndFinishWaitForNodes(t *testing.T) {
	l, fc, _, p, out := signNode(t)
	ctx := context.Background()
	fc.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}}, metav1.CreateOptions{})
	before := pkitest.Files(t, l.KubernetesDir)
	err := p.Sign(ctx)
	if err == nil || !strings.Contains(err.Error(), `the Nodes [node2] have not recorded the new CA`) || !strings.Contains(err.Error(), "phase trust") {
		t.Fatalf("got %v", err)
	}
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 {
		t.Fatalf("a refused sign changed %v", got)
	}
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	patch := []byte(`{"metadata":{"annotations":{"` + TrustedAnnotation + `":"` + bootstraptoken.CACertHash(cluster.Signer) + "," + bootstraptoken.CACertHash(cluster.Next) + `"}}}`)
	fc.client.CoreV1().Nodes().Patch(ctx, "node2", "application/merge-patch+json", patch, metav1.PatchOptions{})
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	err = p.Finish(ctx)
	if err == nil || !strings.Contains(err.Error(), `the Nodes [node2] have not recorded the new CA`) || !strings.Contains(err.Error(), "phase sign") {
		t.Fatalf("got %v", err)
	}
}

func TestFinishNeedsSign(t *testing.T) {
	_, _, _, p, _ := signNode(t)
	if err := p.Finish(context.Background()); err == nil || !strings.Contains(err.Error(), "run the sign phase first") {
		t.Fatalf("got %v", err)
	}
}

func TestWorkerSignAndFinish(t *testing.T) {
	_, l := testNode(t)
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	// The control plane's new CA, which its controller manager signs with.
	next, _ := pki.NewPrivateKey("ECDSA-P256")
	nextCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", IsCA: true, Validity: 1e18}, next, testNow())
	os.MkdirAll(l.Dir(), 0o700)
	if err := pki.WriteCertAndKey(l.CertDir, "rotate-ca/signer", nextCA, next); err != nil {
		t.Fatal(err)
	}
	conf, caFile := filepath.Join(l.KubernetesDir, "kubelet.conf"), pki.CertPath(l.CertDir, "ca")
	if _, err := setKubeconfigCAs(conf, certsOf(cluster.Signer, nextCA), false); err != nil {
		t.Fatal(err)
	}
	listed := certsOf(nextCA, cluster.Signer)
	restarts := 0
	out := &bytes.Buffer{}
	fc := newFakeCluster(t, l)
	w := &Worker{KubeletConf: conf, CAFile: caFile, StateDir: filepath.Join(t.TempDir(), "rotate-ca"), Out: out,
		ClusterInfo:    func(context.Context, string, Bundle) (Bundle, error) { return listed, nil },
		RestartKubelet: func(context.Context) error { restarts++; return nil },
	}
	w.Kubelet = kubeletCert(l, fc.client, w.RestartKubelet, out)
	w.Kubelet.StateDir = w.StateDir
	ctx := context.Background()
	if err := w.Finish(ctx); err == nil || !strings.Contains(err.Error(), "run the finish phase on the control-plane nodes first") {
		t.Fatalf("finish before the control plane's: %v", err)
	}
	if err := w.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cred, _ := w.Kubelet.read()
	if err := cred.cert.CheckSignatureFrom(nextCA); err != nil || restarts != 1 || cred.cert.Subject.CommonName != "system:node:node1" {
		t.Errorf("kubelet certificate %s: %v, %d restarts", cred.cert.Subject, err, restarts)
	}
	if target, _ := os.Readlink(cred.certFile); filepath.Base(target) != "kubelet-client-2026-03-04-05-06-07.pem" {
		t.Errorf("the link names %s", target)
	}
	done := pkitest.Files(t, l.KubernetesDir)
	if err := w.Sign(ctx); err != nil || restarts != 1 || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 0 {
		t.Errorf("second sign: %v, %d restarts", err, restarts)
	}
	listed = certsOf(nextCA)
	if err := w.Finish(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, _ := kubeconfigCAs(conf); !got.Equal(listed) || !mustBundle(t, caFile).Equal(listed) || restarts != 2 {
		t.Errorf("kubelet.conf %s, ca.crt %s, %d restarts", serials(got), serials(mustBundle(t, caFile)), restarts)
	}
	done = pkitest.Files(t, l.KubernetesDir)
	if err := w.Finish(ctx); err != nil || restarts != 2 || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 0 {
		t.Errorf("second finish: %v, %d restarts", err, restarts)
	}
}

// A kubelet.conf that embeds its client certificate (as init writes it
// before the kubelet's first rotation) gets the new one embedded.
func TestKubeletCertEmbedded(t *testing.T) {
	_, l := testNode(t)
	conf := filepath.Join(l.KubernetesDir, "kubelet.conf")
	k := &KubeletCert{KubeletConf: conf}
	cred, err := k.read()
	if err != nil {
		t.Fatal(err)
	}
	pair, _ := os.ReadFile(cred.certFile)
	cfg, _ := clientcmd.LoadFromFile(conf)
	for _, ai := range cfg.AuthInfos {
		ai.ClientCertificate, ai.ClientKey = "", ""
		ai.ClientCertificateData, ai.ClientKeyData = pair, pair
	}
	if err := clientcmd.WriteToFile(*cfg, conf); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCluster(t, l)
	restarts := 0
	out := &bytes.Buffer{}
	k = kubeletCert(l, fc.client, func(context.Context) error { restarts++; return nil }, out)
	signing, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	// The fake signer signs with ca.crt/ca.key: the CA that signs.
	if err := k.Renew(context.Background(), signing.Signer); err != nil || restarts != 0 {
		t.Fatalf("already signed by the signing CA: %v, %d restarts\n%s", err, restarts, out)
	}
	next, _ := pki.NewPrivateKey("ECDSA-P256")
	nextCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", IsCA: true, Validity: 1e18}, next, testNow())
	if err := pki.WriteCertAndKey(l.CertDir, "rotate-ca/signer", nextCA, next); err != nil {
		t.Fatal(err)
	}
	if err := k.Renew(context.Background(), nextCA); err != nil || restarts != 1 {
		t.Fatalf("%v, %d restarts\n%s", err, restarts, out)
	}
	got, err := k.read()
	if err != nil || !got.embedded || got.cert.CheckSignatureFrom(nextCA) != nil {
		t.Errorf("kubelet.conf: embedded %v, %v", got != nil && got.embedded, err)
	}
	if _, err := tlsPairOf(conf); err != nil {
		t.Errorf("the embedded pair does not match: %v", err)
	}
}

// tlsPairOf checks that the kubeconfig's embedded certificate and key
// belong together.
func tlsPairOf(path string) (tls.Certificate, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return tls.Certificate{}, err
	}
	ai := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	return tls.X509KeyPair(ai.ClientCertificateData, ai.ClientKeyData)
}

// checkModes checks that sa.key and sa.pub are 0600, as kubeadm writes
// them.
func checkModes(t *testing.T, sa *SAState) {
	t.Helper()
	for _, p := range []string{sa.KeyPath, sa.PubPath} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v", p, fi.Mode(), err)
		}
	}
}

// A kubelet whose serving certificate the cluster CA issued
// (serverTLSBootstrap) gets one of the new CA too, with the same names,
// beside its client certificate and with the same one restart.
func TestKubeletServingCert(t *testing.T) {
	_, l := testNode(t)
	ca, caKey, err := pki.LoadCertAndKey(l.CertDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewPrivateKey("ECDSA-P256")
	spec := pki.CertSpec{CommonName: "system:node:node1", Organization: []string{"system:nodes"}, DNSNames: []string{"node1"},
		IPs: []net.IP{net.ParseIP("192.168.1.11")}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Validity: 1e15}
	cert, err := pki.NewSignedCert(spec, key.Public(), ca, caKey, testNow())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := pki.EncodeKeyPEM(key)
	kp := filepath.Join(l.KubernetesDir, "kubelet-pki")
	dated := filepath.Join(kp, "kubelet-server-2026-01-01-00-00-00.pem")
	if err := os.WriteFile(dated, append(pki.EncodeCertPEM(cert), keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	serving := filepath.Join(kp, "kubelet-server-current.pem")
	if err := os.Symlink(dated, serving); err != nil {
		t.Fatal(err)
	}
	next, _ := pki.NewPrivateKey("ECDSA-P256")
	nextCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", IsCA: true, Validity: 1e18}, next, testNow())
	if err := pki.WriteCertAndKey(l.CertDir, "rotate-ca/signer", nextCA, next); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	out := &bytes.Buffer{}
	k := kubeletCert(l, newFakeCluster(t, l).client, func(context.Context) error { restarts++; return nil }, out)
	k.DryRun = true
	if err := k.Renew(context.Background(), nextCA); err != nil || !strings.Contains(out.String(), "Would ask the cluster for a kubelet serving certificate of the new CA (system:node:node1), write it where "+serving+" is") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	k.DryRun = false
	if err := k.Renew(context.Background(), nextCA); err != nil || restarts != 1 {
		t.Fatalf("%v, %d restarts\n%s", err, restarts, out)
	}
	target, _ := os.Readlink(serving)
	got := mustBundle(t, serving)[0]
	if filepath.Base(target) != "kubelet-server-2026-03-04-05-06-07.pem" || got.CheckSignatureFrom(nextCA) != nil {
		t.Errorf("serving pair %s: signed by the new CA: %v", target, got.CheckSignatureFrom(nextCA))
	}
	if !slices.Equal(got.DNSNames, []string{"node1"}) || len(got.IPAddresses) != 1 || !got.IPAddresses[0].Equal(net.ParseIP("192.168.1.11")) ||
		!slices.Equal(got.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || got.Subject.CommonName != "system:node:node1" {
		t.Errorf("serving certificate: %s %v %v %v", got.Subject, got.DNSNames, got.IPAddresses, got.ExtKeyUsage)
	}
	if _, err := tls.LoadX509KeyPair(serving, serving); err != nil {
		t.Errorf("the serving pair does not match: %v", err)
	}
	done := pkitest.Files(t, l.KubernetesDir)
	if err := k.Renew(context.Background(), nextCA); err != nil || restarts != 1 || len(changed(done, pkitest.Files(t, l.KubernetesDir))) > 0 {
		t.Errorf("second renew: %v, %d restarts", err, restarts)
	}
}

// TestApproverKubeconfigRotated: under the CISHardening profile the
// kubelet serving certificate approver's kubeconfig is handled as the
// other kubeconfig files: trust adds the new CA to it, sign re-issues its
// client certificate with the new CA, finish leaves the new CA alone in
// it; nothing restarts for it (the approver reads it again by itself),
// and the dry runs name it.
func TestApproverKubeconfigRotated(t *testing.T) {
	l, _, comps, p, out := trustNode(t)
	ctx := context.Background()
	p.Cfg.FeatureGates = map[string]bool{cis.Gate: true}
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	path := cis.ApproverKubeconfig(l.KubernetesDir)
	ca, caKey, err := pki.LoadCertAndKey(l.CertDir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewPrivateKey(v1beta4.EncryptionAlgorithmECDSAP256)
	cert, err := pki.NewSignedCert(pki.CertSpec{CommonName: "kubeadm:kubelet-serving-approver", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: 24 * time.Hour}, key.Public(), ca, caKey, testNow())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := pki.EncodeKeyPEM(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeKubeconfigUser(t, path, Bundle{ca}, &clientcmdapi.AuthInfo{ClientCertificateData: pki.EncodeCertPEM(cert), ClientKeyData: keyPEM})
	noRestartFor := func(step string) {
		t.Helper()
		renewal := p.Renewal.(*fakeRenewal)
		for _, c := range append(comps.log, renewal.log...) {
			if strings.Contains(c, "approver") {
				t.Errorf("%s restarted %q", step, c)
			}
		}
	}

	p.DryRun = true
	if err := p.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	p.DryRun = false
	if want := "Would write " + path + " (certificate-authority-data)"; !strings.Contains(out.String(), want) {
		t.Errorf("trust's dry run did not say %q:\n%s", want, out)
	}
	if err := p.Trust(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, err := kubeconfigCAs(path); err != nil || !got.Equal(certsOf(cluster.Signer, cluster.Next)) {
		t.Errorf("after trust the approver's kubeconfig trusts %s %v", serials(got), err)
	}
	noRestartFor("trust")

	out.Reset()
	p.DryRun = true
	if err := p.Sign(ctx); err != nil {
		t.Fatal(err)
	}
	p.DryRun = false
	if want := "Would re-issue " + cis.ApproverKubeconfigFile + " with the new CA and have kubeadm-kubelet-serving-approver use it"; !strings.Contains(out.String(), want) {
		t.Errorf("sign's dry run did not say %q:\n%s", want, out)
	}
	if err := p.Sign(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	signed, err := pki.ReadKubeconfigClientCert(path)
	if err != nil || signed.CheckSignatureFrom(cluster.Next) != nil || signed.Subject.CommonName != "kubeadm:kubelet-serving-approver" {
		t.Errorf("after sign the approver's certificate: %v %v", signed.Subject, err)
	}
	noRestartFor("sign")

	p.DropOldServiceAccountKey = true
	if err := p.Finish(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, err := kubeconfigCAs(path); err != nil || !got.Equal(certsOf(cluster.Next)) {
		t.Errorf("after finish the approver's kubeconfig trusts %s %v", serials(got), err)
	}
	if now, _ := pki.ReadKubeconfigClientCert(path); !now.Equal(signed) {
		t.Error("finish changed the approver's certificate")
	}
	noRestartFor("finish")
}
