package carotation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeadm-go/kubeadm/internal/noderole"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/pki/pkitest"
)

// twoControlPlanes is node1 of trustNode, with a second control-plane
// Node, node2, whose steps the test sets by its annotations; node1's
// kubelet certificate is issued on the node (no Issue), as in production.
func twoControlPlanes(t *testing.T) (Layout, *fakeCluster, *ControlPlane, *bytes.Buffer) {
	t.Helper()
	l, fc, _, p, out := trustNode(t)
	ctx := context.Background()
	label := []byte(`{"metadata":{"labels":{"` + noderole.ControlPlaneLabel + `":""}}}`)
	if _, err := fc.client.CoreV1().Nodes().Patch(ctx, "node1", types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	node2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2", Labels: map[string]string{noderole.ControlPlaneLabel: ""}}}
	if _, err := fc.client.CoreV1().Nodes().Create(ctx, node2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Kubelet.Issue = nil
	return l, fc, p, out
}

func annotate(t *testing.T, c kubernetes.Interface, node string, kv map[string]any) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": kv}})
	if _, err := c.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func annotations(t *testing.T, c kubernetes.Interface, node string) map[string]string {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}

// With two control-plane nodes: trust waits for the publication only on
// the last node to trust; sign refuses until both trust and issues the
// kubelet's certificate on the node (the other node's controller manager
// may lead and still sign with the old CA); finish refuses until both
// signed, waits an hour after the later sign, and only the last node to
// finish drops the old CAs from cluster-info and the annotations.
func TestTwoControlPlanes(t *testing.T) {
	for _, node2First := range []bool{false, true} {
		t.Run(map[bool]string{false: "node1 finishes first", true: "node2 finished first"}[node2First], func(t *testing.T) {
			l, fc, p, out := twoControlPlanes(t)
			ctx := context.Background()
			cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
			oldHash, newHash := caHash(cluster.Signer), caHash(cluster.Next)

			if err := p.Trust(ctx); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out.String(), "the cluster publishes them once the control-plane nodes [node2] do: run this phase there") ||
				strings.Contains(out.String(), "The cluster trusts the current and the new CAs") {
				t.Errorf("trust on the first control-plane node:\n%s", out)
			}
			if got := annotations(t, fc.client, "node1")[TrustedAnnotation]; got != oldHash+","+newHash {
				t.Errorf("node1 records trust of %q", got)
			}
			if _, err := fc.client.AppsV1().DaemonSets("kube-system").Get(ctx, "kube-proxy", metav1.GetOptions{}); err == nil {
				t.Fatal("the fake cluster has a kube-proxy: the test cannot tell whether trust restarted it")
			}
			err := p.Sign(ctx)
			if err == nil || !strings.Contains(err.Error(), "the Nodes [node2] have not recorded the new CA") {
				t.Fatalf("sign before node2 trusts: %v", err)
			}

			// node2 trusts: trust run again on node1 waits for the
			// publication.
			annotate(t, fc.client, "node2", map[string]any{TrustedAnnotation: oldHash + "," + newHash})
			out.Reset()
			if err := p.Trust(ctx); err != nil || !strings.Contains(out.String(), "The cluster trusts the current and the new CAs") {
				t.Fatalf("trust once node2 trusts: %v\n%s", err, out)
			}

			out.Reset()
			if err := p.Sign(ctx); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out.String(), "Issuing, with this node's key of the new CA, a kubelet client certificate of the new CA (system:node:node1)") {
				t.Errorf("sign did not issue the kubelet's certificate here:\n%s", out)
			}
			if err := leaves(t, l)["kubelet"].CheckSignatureFrom(cluster.Next); err != nil {
				t.Errorf("the kubelet's certificate: %v", err)
			}
			a := annotations(t, fc.client, "node1")
			if a[KubeletClientCAAnnotation] != newHash || a[SASignedAnnotation] != testNow().Format(time.RFC3339) {
				t.Errorf("node1's annotations after sign: %v", a)
			}
			// node2 still signs with the old CA: the workers must wait.
			if info := clusterInfoCAs(t, fc); !info[0].Equal(cluster.Signer) || !strings.Contains(out.String(), "once the control-plane nodes [node2] sign with it too") {
				t.Errorf("sign of node1 before node2's: cluster-info lists %d CAs, the current first %v:\n%s", len(info), info[0].Equal(cluster.Signer), out)
			}

			err = p.Finish(ctx)
			if err == nil || !strings.Contains(err.Error(), "the Nodes [node2] have not recorded the new CA") || !strings.Contains(err.Error(), "phase sign") {
				t.Fatalf("finish before node2 signs: %v", err)
			}
			// node2 signed 10 minutes later: its API server signed with
			// the old key until then.
			later := testNow().Add(10 * time.Minute)
			annotate(t, fc.client, "node2", map[string]any{KubeletClientCAAnnotation: newHash, SASignedAnnotation: later.Format(time.RFC3339)})
			p.KeyOptions.Now = func() time.Time { return testNow().Add(65 * time.Minute) }
			err = p.Finish(ctx)
			if err == nil || !strings.Contains(err.Error(), "run finish again after "+later.Add(time.Hour).Format(time.RFC3339)) {
				t.Fatalf("finish within the hour after node2's sign: %v", err)
			}
			p.KeyOptions.Now = func() time.Time { return later.Add(61 * time.Minute) }

			if node2First {
				annotate(t, fc.client, "node2", map[string]any{TrustedAnnotation: newHash})
			}
			if err := Upload(ctx, fc.client, p.Cfg, l.CertDir, strings.Repeat("0f", 32), testNow()); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := p.Finish(ctx); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
				t.Errorf("%s left: %v", l.Dir(), err)
			}
			if got := mustBundle(t, pki.CertPath(l.CertDir, "ca")); !got.Equal(certsOf(cluster.Next)) {
				t.Errorf("ca.crt holds %s", serials(got))
			}
			info := clusterInfoCAs(t, fc)
			n1, n2 := annotations(t, fc.client, "node1"), annotations(t, fc.client, "node2")
			if !node2First {
				// Not the last: node2 would publish the old CA again.
				if len(info) != 2 || n1[TrustedAnnotation] != newHash || n2[KubeletClientCAAnnotation] != newHash ||
					!strings.Contains(out.String(), "the finish phase of the last control-plane node ([node2] are left) drops the old ones") {
					t.Errorf("finish of the first node: cluster-info lists %d CAs, node1 %v, node2 %v:\n%s", len(info), n1, n2, out)
				}
				// Run again, it changes nothing.
				before := pkitest.Files(t, l.KubernetesDir)
				out.Reset()
				if err := p.Finish(ctx); err != nil || !strings.Contains(out.String(), "nothing to finish") || len(changed(before, pkitest.Files(t, l.KubernetesDir))) > 0 {
					t.Errorf("second finish: %v\n%s", err, out)
				}
				return
			}
			if ok, _ := shared(ctx, fc.client); ok {
				t.Errorf("the last finish left the Secret %s", SecretName)
			}
			if len(info) != 1 || !info[0].Equal(cluster.Next) || len(n1)+len(n2) > 0 {
				t.Errorf("finish of the last node: cluster-info lists %d CAs, node1 %v, node2 %v:\n%s", len(info), n1, n2, out)
			}
		})
	}
}

// A worker's sign waits until every control-plane node signs (the
// leading controller manager signs its CSR): until the last one's sign
// lists the new CA first in cluster-info. A kubelet may not list the
// Nodes, so the worker does not.
func TestWorkerSignWaitsForControlPlanes(t *testing.T) {
	_, l := testNode(t)
	next, _ := pki.NewPrivateKey("ECDSA-P256")
	nextCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "kubernetes", IsCA: true, Validity: 1e18}, next, testNow())
	cluster, _ := ReadCA(l.CertDir, Rotated(nil)[0])
	fc := newFakeCluster(t, l)
	fc.client.(*fake.Clientset).PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "", errors.New("a node may read only its own Node"))
	})
	ctx := context.Background()
	conf := filepath.Join(l.KubernetesDir, "kubelet.conf")
	listed := certsOf(cluster.Signer, nextCA)
	out := &bytes.Buffer{}
	w := &Worker{KubeletConf: conf, CAFile: pki.CertPath(l.CertDir, "ca"), StateDir: l.Dir(), Out: out,
		ClusterInfo:    func(context.Context, string, Bundle) (Bundle, error) { return listed, nil },
		RestartKubelet: func(context.Context) error { return nil },
	}
	w.Kubelet = kubeletCert(l, fc.client, w.RestartKubelet, out)
	before := pkitest.Files(t, l.KubernetesDir)
	if err := w.Sign(ctx); err == nil || !strings.Contains(err.Error(), "run the trust phase on this node first") {
		t.Fatalf("sign before trust: %v", err)
	}
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 {
		t.Errorf("a sign refused before trust changed %v", got)
	}
	// After trust the kubelet trusts both, the current CA first, as
	// cluster-info listed them then.
	if _, err := setKubeconfigCAs(conf, listed, false); err != nil {
		t.Fatal(err)
	}
	before = pkitest.Files(t, l.KubernetesDir)
	err := w.Sign(ctx)
	if err == nil || !strings.Contains(err.Error(), "cluster-info does not list the new cluster CA first yet") {
		t.Fatalf("got %v", err)
	}
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 {
		t.Errorf("a refused sign changed %v", got)
	}
	if err := pki.WriteCertAndKey(l.CertDir, "rotate-ca/signer", nextCA, next); err != nil {
		t.Fatal(err)
	}
	listed = certsOf(nextCA, cluster.Signer)
	if err := w.Sign(ctx); err != nil {
		t.Fatalf("once cluster-info lists the new CA first: %v\n%s", err, out)
	}
	if cred, _ := w.Kubelet.read(); cred.cert.CheckSignatureFrom(nextCA) != nil {
		t.Error("the kubelet's certificate is not of the new CA")
	}
}

// Download writes nothing unless every entry is a new CA of the right
// subject with its key.
func TestDownloadChecks(t *testing.T) {
	cfg, l := testNode(t)
	ctx := context.Background()
	if err := Prepare(&cfg.ClusterConfiguration, l.CertDir, testOptions(), false, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCluster(t, l)
	key := strings.Repeat("0f", 32)
	// The front proxy CA's entry replaced by a CA of another subject.
	other, _ := pki.NewPrivateKey("ECDSA-P256")
	otherCA, _ := pki.NewSelfSignedCA(pki.CertSpec{CommonName: "someone-else", IsCA: true, Validity: 1e18}, other, testNow())
	if err := pki.WriteCertAndKey(l.CertDir, "rotate-ca/front-proxy-ca", otherCA, other); err != nil {
		t.Fatal(err)
	}
	if err := Upload(ctx, fc.client, &cfg.ClusterConfiguration, l.CertDir, key, testNow()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(l.Dir()); err != nil {
		t.Fatal(err)
	}
	before := pkitest.Files(t, l.KubernetesDir)
	err := Download(ctx, fc.client, &cfg.ClusterConfiguration, l.CertDir, key, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `entry front-proxy-ca.crt is the CA "CN=someone-else", not a new front proxy CA`) {
		t.Fatalf("got %v", err)
	}
	if got := changed(before, pkitest.Files(t, l.KubernetesDir)); len(got) > 0 {
		t.Errorf("a refused download wrote %v", got)
	}
	if err := deleteShared(ctx, fc.client); err != nil {
		t.Fatal(err)
	}
	err = Download(ctx, fc.client, &cfg.ClusterConfiguration, l.CertDir, key, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "prepare --upload-certs") {
		t.Fatalf("without the Secret: %v", err)
	}
}
