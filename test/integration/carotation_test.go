package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	csrutil "k8s.io/client-go/util/certificate/csr"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/carotation"
	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/test/controlplane"
)

// TestRotateCAEtcd runs the control-plane steps of a CA rotation (trust,
// sign, finish) against the real etcd, API server, controller manager and
// scheduler made from our files, the components restarted as the kubelet
// would (stopped and started from their manifests), and checks the etcd
// CA and the service-account key above all: etcd and the API server trust
// both etcd CAs from trust on, sign re-issues every etcd certificate
// without restarting either, finish leaves etcd refusing a client
// certificate of the old etcd CA; a ServiceAccount token issued before the
// rotation works through trust and sign, one issued after sign is signed
// by the new key and works, finish refuses within the hour after sign and,
// told to drop the old key anyway, leaves the old token refused and the
// new one working. The API server restarts once in each step (in trust
// for the etcd CA and sa.pub together). A loop reads and writes through
// the API server the whole time; it may fail only while the API server
// itself restarts.
func TestRotateCAEtcd(t *testing.T) {
	cp := controlplane.Start(t, controlplane.Options{Scheduler: true})
	ctx := testContext(t, 10*time.Minute)
	admin := cp.Client()
	layout := carotation.Layout{
		CertDir:       cp.HostPath("/etc/kubernetes/pki"),
		KubernetesDir: cp.HostPath("/etc/kubernetes"),
		ManifestDir:   cp.HostPath("/etc/kubernetes/manifests"),
	}
	cfg := rotateCAConfig(ctx, t, cp)
	createNode(ctx, t, admin, controlplane.DefaultNodeName, cp.AdvertiseAddress().String())
	createClusterInfo(ctx, t, cp, admin)

	// The old etcd CA's client certificate, to try against etcd at the end.
	oldClient := t.TempDir()
	for _, f := range []string{"healthcheck-client.crt", "healthcheck-client.key"} {
		copyTestFile(t, filepath.Join(layout.CertDir, "etcd", f), filepath.Join(oldClient, f))
	}
	oldEtcdCA := mustBundle(t, filepath.Join(layout.CertDir, "etcd", "ca.crt"))[0]

	createCAClients(ctx, t, admin)
	oldToken := serviceAccountToken(ctx, t, admin)
	checkToken(ctx, t, cp, "before the rotation, the token of the old key", oldToken, true)

	comps := &hostComponents{cp: cp}
	superviseCtx, stopSupervising := context.WithCancel(ctx)
	defer stopSupervising()
	go comps.supervise(superviseCtx)
	loop := startRotationLoop(cp)
	out := &syncBuffer{}
	dropOldSAKey := false
	step := func(name string, run func(*carotation.ControlPlane, context.Context) error) {
		t.Helper()
		began := time.Now()
		// A client made now, as each run of the command makes one: the
		// credentials of super-admin.conf change at sign.
		client, err := cp.ClientFor(cp.SuperAdminKubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		p := &carotation.ControlPlane{
			Layout: layout, Client: client, Components: comps, Renewal: comps,
			RestartKubelet: func(context.Context) error { return nil }, // no kubelet here
			Out:            out, Timeout: 90 * time.Second, Interval: 500 * time.Millisecond,
			Cfg: &cfg.ClusterConfiguration, KeyOptions: pki.Options{},
			Kubelet: &carotation.KubeletCert{
				KubeletConf: filepath.Join(layout.KubernetesDir, "kubelet.conf"), StateDir: layout.Dir(),
				Client: func(context.Context) (kubernetes.Interface, error) {
					return cp.ClientFor(cp.SuperAdminKubeconfig())
				},
				Issue:          approvedKubeletCSR(cp),
				RestartKubelet: func(context.Context) error { return nil },
				Timeout:        60 * time.Second, Out: out,
			},
			DropOldServiceAccountKey: dropOldSAKey,
		}
		if err := run(p, ctx); err != nil {
			loop.stop()
			t.Fatalf("%s: %v\n%s", name, err, out.String())
		}
		t.Logf("%s took %v", name, time.Since(began).Round(time.Millisecond))
	}

	if err := carotation.Prepare(&cfg.ClusterConfiguration, layout.CertDir, pki.Options{}, false, out); err != nil {
		t.Fatal(err)
	}
	newEtcdCA := mustBundle(t, filepath.Join(layout.CertDir, carotation.Folder, "etcd", "ca.crt"))[0]

	step("trust", (*carotation.ControlPlane).Trust)
	if got := mustBundle(t, filepath.Join(layout.CertDir, "etcd", "ca.crt")); len(got) != 2 || !got[0].Equal(oldEtcdCA) || !got[1].Equal(newEtcdCA) {
		t.Errorf("etcd/ca.crt after trust holds %d CAs, want the old and the new", len(got))
	}
	if got := comps.restarted(); !strings.HasPrefix(got, "etcd kube-apiserver ") || strings.Count(got, "kube-apiserver") != 1 {
		t.Errorf("trust restarted %q, want etcd then the API server first, the API server once (the etcd CA and sa.pub)", got)
	}
	checkToken(ctx, t, cp, "after trust, the token of the old key", oldToken, true)
	newCA := mustBundle(t, filepath.Join(layout.CertDir, carotation.Folder, "ca.crt"))[0]
	checkCAClientsRestarted(ctx, t, admin, bootstraptoken.CACertHash(newCA))

	comps.reset()
	step("sign", (*carotation.ControlPlane).Sign)
	for _, name := range []string{"server", "peer", "healthcheck-client"} {
		checkSignedBy(t, "etcd/"+name, filepath.Join(layout.CertDir, "etcd", name+".crt"), newEtcdCA)
	}
	checkSignedBy(t, "apiserver-etcd-client", filepath.Join(layout.CertDir, "apiserver-etcd-client.crt"), newEtcdCA)
	if got := comps.restarted(); strings.Contains(got, "etcd") || strings.Count(got, "kube-apiserver") != 1 || !strings.HasPrefix(got, "kube-apiserver kube-controller-manager ") {
		t.Errorf("sign restarted %q: want the API server once, then the controller manager, for the service-account key (etcd and the API server read their re-issued certificates by themselves)", got)
	}
	checkToken(ctx, t, cp, "after sign, the token of the old key", oldToken, true)
	newSAKey, err := pki.LoadKey(filepath.Join(layout.CertDir, "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	newToken := serviceAccountToken(ctx, t, cp.Client())
	if err := checkJWTSignature(newToken, newSAKey.Public()); err != nil {
		t.Errorf("a token issued after sign is not signed by the new service-account key: %v", err)
	}
	if err := checkJWTSignature(oldToken, newSAKey.Public()); err == nil {
		t.Errorf("the token issued before the rotation is signed by the new key")
	}
	checkToken(ctx, t, cp, "after sign, the token of the new key", newToken, true)
	if got := comps.reloaded(); got != "etcd kube-apiserver" {
		t.Errorf("sign waited for %q to reload", got)
	}
	served := servedBy(ctx, t, cp, "127.0.0.1:2379")
	if err := served.CheckSignatureFrom(newEtcdCA); err != nil {
		t.Errorf("etcd serves a certificate not of the new etcd CA: %v", err)
	}
	etcdCAFile := filepath.Join(layout.CertDir, "etcd", "ca.crt")
	if err := etcdMembers(ctx, cp, etcdCAFile, oldClient); err != nil {
		t.Errorf("between sign and finish etcd refuses a client of the old etcd CA: %v", err)
	}

	// Within the hour after sign, finish refuses and changes nothing.
	before := readTree(t, layout.KubernetesDir)
	refusal := &carotation.ControlPlane{Layout: layout, Client: cp.Client(), Components: comps, Out: out, Cfg: &cfg.ClusterConfiguration,
		Kubelet: &carotation.KubeletCert{KubeletConf: filepath.Join(layout.KubernetesDir, "kubelet.conf")}}
	if err := refusal.Finish(ctx); err == nil || !strings.Contains(err.Error(), "--drop-old-service-account-key-now") {
		t.Errorf("finish within the hour after sign: %v", err)
	} else {
		t.Logf("finish within the hour after sign: %v", err)
	}
	if after := readTree(t, layout.KubernetesDir); after != before {
		t.Errorf("the refused finish changed files")
	}

	comps.reset()
	dropOldSAKey = true
	step("finish", (*carotation.ControlPlane).Finish)
	if got := mustBundle(t, filepath.Join(layout.CertDir, "etcd", "ca.crt")); len(got) != 1 || !got[0].Equal(newEtcdCA) {
		t.Errorf("etcd/ca.crt after finish holds %d CAs, want the new one alone", len(got))
	}
	if got := comps.restarted(); !strings.HasPrefix(got, "etcd kube-apiserver ") || strings.Count(got, "kube-apiserver") != 1 {
		t.Errorf("finish restarted %q, want etcd then the API server first, the API server once", got)
	}
	checkToken(ctx, t, cp, "after finish, the token of the old key", oldToken, false)
	checkToken(ctx, t, cp, "after finish, the token of the new key", newToken, true)
	time.Sleep(time.Second) // the loop goes on a little after the steps
	tries, failures := loop.stop()
	t.Logf("rotation:\n%s", out.String())
	t.Logf("restarts, as the kubelet would: %s", comps.entries("revived "))

	t.Run("etcd refuses a client of the old etcd CA, accepts the new", func(t *testing.T) {
		if err := etcdMembers(ctx, cp, etcdCAFile, oldClient); err == nil {
			t.Errorf("etcd still accepts a client certificate of the old etcd CA")
		}
		if err := etcdMembers(ctx, cp, etcdCAFile, filepath.Join(layout.CertDir, "etcd")); err != nil {
			t.Errorf("etcd refuses the re-issued healthcheck client: %v", err)
		}
	})
	t.Run("the API server works on the new etcd CA alone", func(t *testing.T) {
		c, err := cp.ClientFor(cp.SuperAdminKubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-rotation"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("writing through the API server: %v", err)
		}
	})
	t.Run("API calls failed only while the API server or etcd restarted", func(t *testing.T) {
		down := comps.downWindows("kube-apiserver")
		restarts := len(down)
		// The API server's only etcd member restarting fails the calls
		// that wait on it: those begun up to the client's 10 s timeout
		// before, and those in the seconds its first election takes
		// after it started.
		for _, w := range comps.downWindows("etcd") {
			w.from, w.to = w.from.Add(-10*time.Second), w.to.Add(5*time.Second)
			down = append(down, w)
		}
		var outside []string
		during := 0
		for _, f := range failures {
			if f.within(down) {
				during++
				continue
			}
			outside = append(outside, f.String())
		}
		t.Logf("API loop: %d calls, %d failed while the API server (%d restarts) or etcd restarted, %d at other times", tries, during, restarts, len(outside))
		if len(outside) > 0 || tries < 20 {
			t.Errorf("%d calls; failed outside the API server's and etcd's restarts:\n%s", tries, strings.Join(outside, "\n"))
		}
	})
}

// rotateCAConfig is the defaulted configuration of the control plane,
// its certificate folder the one on this machine.
func rotateCAConfig(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane) *kubeadm.InitConfiguration {
	t.Helper()
	cfg := defaultedConfig(ctx, t, cp, "/kubeadm.yaml")
	cfg.CertificatesDir = cp.HostPath("/etc/kubernetes/pki")
	return cfg
}

// defaultedConfig reads the control plane's configuration file at
// configPath (inside it) and defaults it as init would on its node.
func defaultedConfig(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, configPath string) *kubeadm.InitConfiguration {
	t.Helper()
	docs, err := config.ReadFile(cp.HostPath(configPath), config.Lenient)
	if err != nil {
		t.Fatal(err)
	}
	env := config.Environment{
		Hostname:       func() (string, error) { return controlplane.DefaultNodeName, nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP(cp.AdvertiseAddress().String()), nil },
		CRISocket:      func() (string, error) { return "unix:///var/run/containerd/containerd.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
		NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:           func(string, ...any) {},
	}
	cfg, err := env.InitConfiguration(ctx, docs, config.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// createClusterInfo makes kube-public/cluster-info as init's
// bootstrap-token phase does (the controller manager signs it).
func createClusterInfo(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, c kubernetes.Interface) {
	t.Helper()
	ca, err := os.ReadFile(cp.CACertPath())
	if err != nil {
		t.Fatal(err)
	}
	data, err := clientcmd.Write(clientcmdapi.Config{Clusters: map[string]*clientcmdapi.Cluster{"": {Server: cp.Endpoint(), CertificateAuthorityData: ca}}})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}, Data: map[string]string{bootstrapapi.KubeConfigKey: string(data)}}
	if _, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// approvedKubeletCSR asks for a kubelet client certificate as the kubelet
// does, approves it as an administrator (no kubelet RBAC here), and waits
// for the controller manager to sign it with the CA it signs with now.
func approvedKubeletCSR(cp *controlplane.ControlPlane) func(context.Context, carotation.Request) ([]byte, error) {
	return func(ctx context.Context, r carotation.Request) ([]byte, error) {
		c, err := cp.ClientFor(cp.SuperAdminKubeconfig())
		if err != nil {
			return nil, err
		}
		usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		name, uid, err := csrutil.RequestCertificateWithContext(ctx, c, r.CSR, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, r.Key)
		if err != nil {
			return nil, err
		}
		csr, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "IntegrationTest", Message: "approved by the test",
		})
		if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
		return csrutil.WaitForCertificate(ctx, c, name, uid)
	}
}

// hostComponents restarts the components of the control plane as the
// kubelet would (stopped, then started from their manifests as they are
// now), and records when each was down. It is both the rotation's
// Components and the renewal's Node.
type hostComponents struct {
	cp *controlplane.ControlPlane
	// restartMu keeps supervise from starting a component Restart stopped.
	restartMu sync.Mutex
	mu        sync.Mutex
	log       []string
	down      []downWindow
}

type downWindow struct {
	component string
	from, to  time.Time
}

func (h *hostComponents) Running(context.Context, string) (string, error) { return "process", nil }

// Restart stops component (when it runs: the controller manager and the
// scheduler end by themselves when the API server was away longer than
// their leader election allows) and starts it again.
func (h *hostComponents) Restart(ctx context.Context, component string) error {
	h.restartMu.Lock()
	defer h.restartMu.Unlock()
	from := time.Now()
	_ = h.cp.StopComponent(component)
	err := h.cp.StartComponent(ctx, component)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, "restart "+component)
	h.down = append(h.down, downWindow{component, from, time.Now()})
	return err
}

// supervise starts again, as the kubelet does, the controller manager and
// the scheduler when they ended by themselves, until ctx ends.
func (h *hostComponents) supervise(ctx context.Context) {
	for ctx.Err() == nil {
		for _, c := range []string{"kube-controller-manager", "kube-scheduler"} {
			h.restartMu.Lock()
			if err := h.cp.StartComponent(ctx, c); err == nil {
				h.mu.Lock()
				h.log = append(h.log, "revived "+c)
				h.mu.Unlock()
			}
			h.restartMu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// WaitReplaced: the kubelet would replace the component for its changed
// manifest; here it is restarted from it.
func (h *hostComponents) WaitReplaced(ctx context.Context, component, _ string) error {
	return h.Restart(ctx, component)
}

// Reloaded waits until component serves serves (etcd and the API server
// read their certificate files again by themselves).
func (h *hostComponents) Reloaded(ctx context.Context, component string, serves *x509.Certificate) error {
	h.mu.Lock()
	h.log = append(h.log, "reloaded "+component)
	h.mu.Unlock()
	addr := map[string]string{"etcd": "127.0.0.1:2379", "kube-apiserver": net.JoinHostPort(h.cp.AdvertiseAddress().String(), "6443")}[component]
	if serves == nil || addr == "" {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := served(ctx, h.cp, addr)
		if err == nil && got.Equal(serves) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not serve its re-issued certificate after 30s (%v)", component, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *hostComponents) entries(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range h.log {
		if c, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, c)
		}
	}
	return strings.Join(out, " ")
}

func (h *hostComponents) restarted() string { return h.entries("restart ") + " " }
func (h *hostComponents) reloaded() string  { return h.entries("reloaded ") }

func (h *hostComponents) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = nil
}

func (h *hostComponents) downWindows(component string) []downWindow {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []downWindow
	for _, d := range h.down {
		if d.component == component {
			out = append(out, d)
		}
	}
	return out
}

// served returns the certificate the TLS server at addr (inside the
// namespace) presents.
func served(ctx context.Context, cp *controlplane.ControlPlane, addr string) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := cp.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the certificate
	// etcd asks for a client certificate; the server's is seen before.
	_ = conn.HandshakeContext(ctx)
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", addr)
	}
	return certs[0], nil
}

func servedBy(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, addr string) *x509.Certificate {
	t.Helper()
	c, err := served(ctx, cp, addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// etcdMembers lists etcd's members with the healthcheck client pair of
// dir (healthcheck-client.crt and .key), trusting the CAs of caFile.
func etcdMembers(ctx context.Context, cp *controlplane.ControlPlane, caFile, dir string) error {
	c, err := etcd.New(etcd.Config{
		Endpoints:    []string{"https://127.0.0.1:2379"},
		CAFile:       caFile,
		CertFile:     filepath.Join(dir, "healthcheck-client.crt"),
		KeyFile:      filepath.Join(dir, "healthcheck-client.key"),
		DialTimeout:  3 * time.Second,
		CallTimeout:  3 * time.Second,
		RetryTimeout: 3 * time.Second,
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			return cp.DialContext(ctx, "tcp", addr)
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Members(ctx)
	return err
}

func checkSignedBy(t *testing.T, name, path string, ca *x509.Certificate) {
	t.Helper()
	if err := mustBundle(t, path)[0].CheckSignatureFrom(ca); err != nil {
		t.Errorf("%s is not signed by the new CA: %v", name, err)
	}
}

func mustBundle(t *testing.T, path string) carotation.Bundle {
	t.Helper()
	b, err := carotation.ReadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// rotationLoop reads and writes through the API server every 100 ms,
// with a client made from super-admin.conf each time (its credentials
// change during the rotation), and records the calls that failed.
type rotationLoop struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	tries    int
	failures []loopFailure
}

type loopFailure struct {
	at  time.Time
	err error
}

func (f loopFailure) String() string { return f.at.Format("15:04:05.000") + ": " + f.err.Error() }

// within reports whether f happened while one of the windows lasted (a
// call started just before a stop fails with it).
func (f loopFailure) within(ws []downWindow) bool {
	for _, w := range ws {
		if !f.at.Before(w.from.Add(-time.Second)) && !f.at.After(w.to) {
			return true
		}
	}
	return false
}

func startRotationLoop(cp *controlplane.ControlPlane) *rotationLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &rotationLoop{cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			at := time.Now()
			if err := loopCall(ctx, cp, i); err != nil && ctx.Err() == nil {
				l.failures = append(l.failures, loopFailure{at, err})
			}
			l.tries++
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return l
}

// loopCall reads a Namespace and writes a ConfigMap (etcd is behind
// both).
func loopCall(ctx context.Context, cp *controlplane.ControlPlane, i int) error {
	cfg, err := cp.RESTConfig(cp.SuperAdminKubeconfig())
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"data":{"i":"%d"}}`, i)
	_, err = c.CoreV1().ConfigMaps("default").Patch(ctx, "rotation-loop", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rotation-loop"}}, metav1.CreateOptions{})
	}
	return err
}

func (l *rotationLoop) stop() (int, []loopFailure) {
	l.cancel()
	l.wg.Wait()
	return l.tries, l.failures
}
