package carotation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/certrenewal"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Components restarts the control-plane components of this node.
type Components interface {
	// Running returns the ID of component's running container ("" for none).
	Running(ctx context.Context, component string) (string, error)
	// Restart stops component's container and waits until the kubelet
	// runs a new one and it is healthy.
	Restart(ctx context.Context, component string) error
	// WaitReplaced waits until a container of component other than old
	// runs and is healthy (the kubelet replaces it after its manifest
	// changed).
	WaitReplaced(ctx context.Context, component, old string) error
}

// The kubeconfig files of a control-plane node that trust the cluster CA,
// and the component to restart when one changes ("" for none: nobody
// reads admin.conf and super-admin.conf for long, and the kubelet serving
// certificate approver of the CISHardening profile reads its file again
// by itself).
var kubeconfigReaders = []struct{ file, component string }{
	{"admin.conf", ""},
	{"super-admin.conf", ""},
	{"controller-manager.conf", ControllerManager},
	{"scheduler.conf", Scheduler},
	{"kubelet.conf", Kubelet},
	{cis.ApproverKubeconfigFile, ""},
}

// kubeconfigFile is one of kubeconfigReaders on this node: its path and
// the component that reads it ("" for none).
type kubeconfigFile struct{ path, component string }

// restarts is the component to restart after the file changed, if any.
func (k kubeconfigFile) restarts() []string {
	if k.component == "" {
		return nil
	}
	return []string{k.component}
}

// kubeconfigs returns the kubeconfigReaders this node has (a worker has
// only kubelet.conf, super-admin.conf may be gone, and only a node of the
// CISHardening profile has the approver's).
func (p *ControlPlane) kubeconfigs() []kubeconfigFile {
	var files []kubeconfigFile
	for _, k := range kubeconfigReaders {
		path := pki.KubeconfigPath(p.KubernetesDir, k.file)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		files = append(files, kubeconfigFile{path, k.component})
	}
	return files
}

// The controller manager's flags that name the CA it signs with. Its
// signer wants exactly one certificate in that file, so during a rotation
// they name a copy of the signing CA in Folder (kubernetes/kubeadm#1350).
const (
	signingCertFlag = "--cluster-signing-cert-file="
	signingKeyFlag  = "--cluster-signing-key-file="
)

// ControlPlane is the trust step on a control-plane node.
type ControlPlane struct {
	Layout
	// Client reaches the API server as a cluster administrator.
	Client     kubernetes.Interface
	Components Components
	// RestartKubelet restarts the kubelet and waits until it is healthy.
	RestartKubelet func(ctx context.Context) error
	// DryRun lists what would change and changes nothing.
	DryRun bool
	Out    io.Writer
	// Timeout bounds the wait for the ConfigMaps the cluster publishes;
	// Interval separates two looks (0: 1 s).
	Timeout  time.Duration
	Interval time.Duration

	// The cluster's configuration (which CAs rotate, and the validity and
	// key algorithm of the certificates sign re-issues), how to make the
	// keys, and the renewal's restarts and health waits (decision 008).
	Cfg        *kubeadm.ClusterConfiguration
	KeyOptions pki.Options
	Renewal    certrenewal.Node
	// Kubelet renews this node's kubelet client certificate.
	Kubelet *KubeletCert
	// DropOldServiceAccountKey makes finish drop the old service-account
	// public key before ServiceAccountKeyGrace has passed since sign.
	DropOldServiceAccountKey bool
}

// DropOldServiceAccountKeyFlag is the command's flag that sets
// DropOldServiceAccountKey, named in finish's refusal.
const DropOldServiceAccountKeyFlag = "drop-old-service-account-key-now"

// change is one file the step writes, and the components that must read
// it again.
type change struct {
	path, what string
	restarts   []string
	// manifest: the kubelet replaces the controller manager when it
	// changes.
	manifest bool
	write    func(dryRun bool) (bool, error)
}

// caReaders are the components to restart after the file of ca changed:
// those that read it only at start. The API server and the kubelet read
// the cluster and front proxy CA files again by themselves; etcd
// (--trusted-ca-file, --peer-trusted-ca-file) and the API server
// (--etcd-cafile) read the etcd CA file only at start.
func caReaders(ca pki.Cert) []string {
	switch ca.Name {
	case pki.CAName:
		return []string{ControllerManager} // --root-ca-file
	case pki.EtcdCAName:
		return []string{Etcd, APIServer}
	}
	return nil
}

// readRotated reads the state of every rotated CA, in Rotated's order
// (the cluster CA first).
func (p *ControlPlane) readRotated() ([]*CAState, error) {
	var out []*CAState
	for _, ca := range Rotated(p.Cfg) {
		s, err := ReadCA(p.CertDir, ca)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Trust makes this control-plane node, and the cluster objects, trust the
// current and the new CAs (phase trust):
//
//  1. the controller manager signs with a copy of the signing CA in
//     Folder (its manifest's flags changed), since ca.crt becomes a bundle;
//  2. ca.crt and front-proxy-ca.crt hold the current and the new CA, which
//     the API server and the kubelet read again by themselves, and so does
//     etcd/ca.crt, which etcd and the API server read only at start;
//     sa.pub lists the current and the new service-account public key,
//     which the API server reads only at start;
//  3. the kubeconfig files' certificate-authority-data holds both;
//  4. etcd (the etcd CA), the API server (the etcd CA and sa.pub: one
//     restart for both), the controller manager (root CA it publishes),
//     the scheduler and the kubelet (their kubeconfig) restart, one at a
//     time, each healthy before the next: no leaf certificate changes
//     yet, so etcd and the API server accept each other at every instant;
//  5. cluster-info holds both, and the step waits until every
//     kube-root-ca.crt ConfigMap and extension-apiserver-authentication
//     do;
//  6. the Pods of kube-proxy and the cluster DNS, whose clients read the
//     CA only at start, are restarted (a rollout) and waited for.
//
// It only adds trust, never removes any, so it may run at any time of a
// rotation; run again it changes nothing.
func (p *ControlPlane) Trust(ctx context.Context) error {
	states, err := p.readRotated()
	if err != nil {
		return err
	}
	cluster := states[0]
	if cluster.Next != nil && cluster.Signer.Equal(cluster.Next) {
		// Unless a kubeadm that did not rotate the service-account key
		// ran sign: its new key still needs trusting, the rest changes
		// nothing.
		if sa, err := ReadSA(p.CertDir); err != nil || sa.Next == nil || sa.accepts(sa.Next) {
			fmt.Fprintf(p.Out, "[rotate-ca] The new CAs sign already (phase sign ran): nothing to trust\n")
			return nil
		}
	}
	want := map[string]Bundle{}
	for _, s := range states {
		if s.Next == nil && p.DryRun {
			fmt.Fprintf(p.Out, "[rotate-ca] Would make this node and the cluster trust the new CAs of the prepare phase beside the current ones (none made yet, so nothing more is compared)\n")
			return nil
		}
		if s.Next == nil {
			return fmt.Errorf("no new %s in %s: run the prepare phase first", s.CA.Description, p.Dir())
		}
		want[s.CA.Name] = bundleOf(append(slices.Clone(s.Trusted), s.Next)...)
	}
	clusterWant, frontWant := want[pki.CAName], want[pki.FrontProxyCAName]
	sa, err := ReadSA(p.CertDir)
	if err != nil {
		return err
	}
	if sa.Next == nil && p.DryRun {
		fmt.Fprintf(p.Out, "[rotate-ca] Would make the API server accept the tokens of the new service-account key of the prepare phase (none made yet, so nothing more is compared)\n")
		return nil
	}
	if sa.Next == nil {
		return fmt.Errorf("no new service-account key (%s): run the prepare phase first", sa.NextPath)
	}

	manifest := staticpod.ManifestPath(p.ManifestDir, ControllerManager)
	sCrt, sKey := filepath.Join(p.CertDir, signerCert), filepath.Join(p.CertDir, signerKey)
	changes := []change{
		{sCrt, "the controller manager's signing CA", nil, false, func(dry bool) (bool, error) {
			return copyFile(pki.CertPath(p.CertDir, cluster.CA.BaseName), sCrt, Bundle{cluster.Signer}.PEM(), dry)
		}},
		{sKey, "the controller manager's signing key", nil, false, func(dry bool) (bool, error) {
			return copyFile(pki.KeyPath(p.CertDir, cluster.CA.BaseName), sKey, nil, dry)
		}},
	}
	for _, s := range states {
		path, b := pki.CertPath(p.CertDir, s.CA.BaseName), want[s.CA.Name]
		changes = append(changes, change{path, "trust bundle of the " + s.CA.Description, caReaders(s.CA), false, func(dry bool) (bool, error) {
			return writeBundle(path, b, dry)
		}})
	}
	// The API server reads --service-account-key-file only at start: with
	// a stacked etcd, the restart for the etcd CA above is the same one.
	accepted := keysOf(append(slices.Clone(sa.Accepted), sa.Next.Public())...)
	changes = append(changes, change{sa.PubPath, "the service-account public keys: the current and the new one", []string{APIServer}, false, func(dry bool) (bool, error) {
		return sa.writePublicKeys(accepted, dry)
	}})
	for _, k := range p.kubeconfigs() {
		path := k.path
		cur, err := kubeconfigCAs(path)
		if err != nil {
			return err
		}
		want := bundleOf(append(cur, clusterWant...)...)
		changes = append(changes, change{path, "certificate-authority-data", k.restarts(), false, func(dry bool) (bool, error) {
			return setKubeconfigCAs(path, want, dry)
		}})
	}
	// The manifest last: the controller manager the kubelet starts for it
	// reads the files above.
	changes = append(changes, change{manifest, "flags " + signingCertFlag + " and " + signingKeyFlag, []string{ControllerManager}, true, func(dry bool) (bool, error) {
		return setSigningFlags(manifest, signerCert, signerKey, dry)
	}})
	return p.apply(ctx, changes, func(ctx context.Context) error {
		if p.DryRun {
			fmt.Fprintf(p.Out, "[rotate-ca] Would make the cluster-info ConfigMap trust %d cluster CAs and wait until the cluster publishes them\n", len(clusterWant))
			fmt.Fprintf(p.Out, "[rotate-ca] Would then restart the Pods of kube-proxy and the cluster DNS, whose clients read the CA only at start, and wait for them\n")
			return nil
		}
		if err := TrustInClusterInfo(ctx, p.Client, clusterWant, p.Out); err != nil {
			return err
		}
		// The leading controller manager, maybe another node's, publishes
		// its root CA file: the new CA is published once every
		// control-plane node trusts it.
		lagging, err := p.lagging(ctx, TrustedAnnotation, trusts(caHash(cluster.Next)))
		if err != nil {
			return err
		}
		if len(lagging) > 0 {
			fmt.Fprintf(p.Out, "[rotate-ca] This node trusts the current and the new CAs; the cluster publishes them once the control-plane nodes %v do: run this phase there\n", lagging)
			return p.kubelet().RecordTrust(ctx, clusterWant)
		}
		fmt.Fprintf(p.Out, "[rotate-ca] Waiting until every kube-root-ca.crt ConfigMap and extension-apiserver-authentication trust the new CAs\n")
		if err := p.waitPublished(ctx, clusterWant, frontWant, holds); err != nil {
			return err
		}
		fmt.Fprintf(p.Out, "[rotate-ca] The cluster trusts the current and the new CAs\n")
		if err := p.restartClients(ctx, bootstraptoken.CACertHash(cluster.Next)); err != nil {
			return err
		}
		return p.kubelet().RecordTrust(ctx, clusterWant)
	})
}

// apply makes the changes and the restarts they need, then runs publish
// (also in a dry run, to list what it would do).
func (p *ControlPlane) apply(ctx context.Context, changes []change, publish func(ctx context.Context) error) error {
	pending := pendingPath(p.Dir())
	need, err := pending.read()
	if err != nil {
		return err
	}
	var due []change
	for _, c := range changes {
		differs, err := c.write(true)
		if err != nil {
			return err
		}
		if differs {
			due = append(due, c)
			for _, r := range c.restarts {
				if !slices.Contains(need, r) {
					need = append(need, r)
				}
			}
		}
	}
	if p.DryRun {
		for _, c := range due {
			fmt.Fprintf(p.Out, "[rotate-ca] Would write %s (%s)\n", c.path, c.what)
		}
		for _, c := range restartOrder {
			if slices.Contains(need, c) {
				fmt.Fprintf(p.Out, "[rotate-ca] Would restart %s\n", c)
			}
		}
		return publish(ctx)
	}
	if err := pending.write(need); err != nil {
		return fmt.Errorf("recording the restarts to make: %w", err)
	}
	oldCM := ""
	for _, c := range due {
		if c.manifest {
			if oldCM, err = p.Components.Running(ctx, ControllerManager); err != nil {
				return err
			}
		}
		if _, err := c.write(false); err != nil {
			return fmt.Errorf("writing %s: %w", c.path, err)
		}
		fmt.Fprintf(p.Out, "[rotate-ca] Wrote %s (%s)\n", c.path, c.what)
	}
	manifestChanged := oldCM != ""
	for _, comp := range restartOrder {
		if !slices.Contains(need, comp) {
			continue
		}
		switch {
		case comp == Kubelet:
			fmt.Fprintf(p.Out, "[rotate-ca] Restarting the kubelet\n")
			err = p.RestartKubelet(ctx)
		case comp == ControllerManager && manifestChanged:
			fmt.Fprintf(p.Out, "[rotate-ca] Waiting for the kubelet to start %s on its changed manifest\n", comp)
			err = p.Components.WaitReplaced(ctx, comp, oldCM)
		default:
			fmt.Fprintf(p.Out, "[rotate-ca] Restarting %s\n", comp)
			err = p.Components.Restart(ctx, comp)
		}
		if err != nil {
			return fmt.Errorf("%s did not come back: %w (run the phase again once it is healthy)", comp, err)
		}
		need = slices.DeleteFunc(need, func(s string) bool { return s == comp })
		if err := pending.write(need); err != nil {
			return err
		}
	}
	return publish(ctx)
}

// TrustInClusterInfo makes the kube-public/cluster-info ConfigMap, which
// joining nodes and the trust step of workers read, trust every CA of
// want too (the bootstrap signer signs it again by itself).
func TrustInClusterInfo(ctx context.Context, c kubernetes.Interface, want Bundle, out io.Writer) error {
	changed, err := updateClusterInfo(ctx, c, func(cur Bundle) Bundle { return bundleOf(append(cur, want...)...) })
	if changed {
		fmt.Fprintf(out, "[rotate-ca] The cluster-info ConfigMap trusts the new cluster CA too\n")
	}
	return err
}

// updateClusterInfo makes the CAs of the kube-public/cluster-info
// ConfigMap what change returns for them; it reports whether it wrote.
func updateClusterInfo(ctx context.Context, c kubernetes.Interface, change func(cur Bundle) Bundle) (bool, error) {
	for attempt := 0; ; attempt++ {
		cm, err := c.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading the cluster-info ConfigMap: %w", err)
		}
		cfg, err := clientcmd.Load([]byte(cm.Data[bootstrapapi.KubeConfigKey]))
		if err != nil {
			return false, fmt.Errorf("the cluster-info ConfigMap: %w", err)
		}
		if len(cfg.Clusters) != 1 {
			return false, fmt.Errorf("the cluster-info ConfigMap names %d clusters, not one", len(cfg.Clusters))
		}
		changed := false
		for _, cl := range cfg.Clusters {
			cur, err := ParseBundle(cl.CertificateAuthorityData)
			if err != nil {
				return false, fmt.Errorf("the cluster-info ConfigMap's CA: %w", err)
			}
			if want := change(cur); !want.Equal(cur) {
				cl.CertificateAuthorityData, changed = want.PEM(), true
			}
		}
		if !changed {
			return false, nil
		}
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			return false, err
		}
		cm.Data[bootstrapapi.KubeConfigKey] = string(data)
		_, err = c.CoreV1().ConfigMaps(metav1.NamespacePublic).Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("updating the cluster-info ConfigMap: %w", err)
		}
		return true, nil
	}
}

// waitPublished waits until the controller manager published clusterWant
// in every kube-root-ca.crt ConfigMap and the API server both bundles in
// extension-apiserver-authentication, as check (holds, or holdsOnly)
// compares them.
func (p *ControlPlane) waitPublished(ctx context.Context, clusterWant, frontWant Bundle, check func(corev1.ConfigMap, string, Bundle) error) error {
	interval := p.interval()
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	var last error
	for {
		if last = p.published(ctx, clusterWant, frontWant, check); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the new CAs were not published within %v: %w", p.Timeout, last)
		case <-time.After(interval):
		}
	}
}

func (p *ControlPlane) published(ctx context.Context, clusterWant, frontWant Bundle, check func(corev1.ConfigMap, string, Bundle) error) error {
	cms, err := p.Client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"})
	if err != nil {
		return err
	}
	nss, err := p.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			continue
		}
		have[cm.Namespace] = true
		if err := check(cm, "ca.crt", clusterWant); err != nil {
			return err
		}
	}
	for _, ns := range nss.Items {
		if !have[ns.Name] && ns.Status.Phase == corev1.NamespaceActive {
			return fmt.Errorf("namespace %s has no kube-root-ca.crt ConfigMap yet", ns.Name)
		}
	}
	auth, err := p.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := check(*auth, "client-ca-file", clusterWant); err != nil {
		return err
	}
	return check(*auth, "requestheader-client-ca-file", frontWant)
}

// holds checks that key of cm holds every certificate of want.
func holds(cm corev1.ConfigMap, key string, want Bundle) error {
	got, err := ParseBundle([]byte(cm.Data[key]))
	if err != nil {
		return fmt.Errorf("%s/%s %s: %w", cm.Namespace, cm.Name, key, err)
	}
	for i, c := range want {
		if !got.Contains(c) {
			return fmt.Errorf("%s/%s %s lacks CA %d of %d (serial %s)", cm.Namespace, cm.Name, key, i+1, len(want), c.SerialNumber)
		}
	}
	return nil
}

// copyFile makes to hold data (nil: what from holds), with the mode and
// owner of from; it reports whether it had to write.
func copyFile(from, to string, data []byte, dryRun bool) (bool, error) {
	if data == nil {
		var err error
		if data, err = boundedread.ReadFile(from, boundedread.MaxFile); err != nil {
			return false, err
		}
	}
	if cur, err := boundedread.ReadFile(to, boundedread.MaxFile); err == nil && bytes.Equal(cur, data) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	if err := os.MkdirAll(filepath.Dir(to), pki.CertDirMode); err != nil {
		return false, err
	}
	return true, atomicfile.WriteLike(to, data, from, pki.KeyMode)
}

// setSigningFlags makes the controller manager's manifest at path name
// cert and key (relative to the folder of the CA it names now, which
// kubeadm mounts into its Pod) as its signing CA, changing only those two
// lines of the file; it reports whether it had to write.
func setSigningFlags(path, cert, key string, dryRun bool) (bool, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return false, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	found := 0
	changed := false
	for i, l := range lines {
		for _, f := range []struct{ flag, rel string }{{signingCertFlag, cert}, {signingKeyFlag, key}} {
			at := strings.Index(l, f.flag)
			if at < 0 {
				continue
			}
			found++
			value := strings.TrimRight(l[at+len(f.flag):], "\r\n")
			want := filepath.Join(signingBase(value, cert, key), f.rel)
			if value != want {
				lines[i] = l[:at+len(f.flag)] + want + l[at+len(f.flag)+len(value):]
				changed = true
			}
		}
	}
	if found != 2 {
		return false, fmt.Errorf("%s: no %s and %s flags to point at the signing CA", path, strings.TrimSuffix(signingCertFlag, "="), strings.TrimSuffix(signingKeyFlag, "="))
	}
	if !changed || dryRun {
		return changed, nil
	}
	return true, atomicfile.WriteLike(path, []byte(strings.Join(lines, "")), path, 0o600)
}

// The controller manager's signing CA during a rotation, relative to the
// certificate folder.
var (
	signerCert = filepath.Join(Folder, "signer.crt")
	signerKey  = filepath.Join(Folder, "signer.key")
)

// signingBase is the certificate folder a signing flag's value lies in:
// its folder, less Folder when it names a file in there.
func signingBase(value, cert, key string) string {
	for _, rel := range []string{cert, key, signerCert, signerKey, "ca.crt", "ca.key"} {
		if strings.HasSuffix(value, "/"+rel) {
			return strings.TrimSuffix(value, "/"+rel)
		}
	}
	return filepath.Dir(value)
}

// interval separates two looks at the cluster's objects.
func (p *ControlPlane) interval() time.Duration {
	if p.Interval <= 0 {
		return time.Second
	}
	return p.Interval
}

// kubelet is Kubelet with this step's dry run and output.
func (p *ControlPlane) kubelet() *KubeletCert {
	k := *p.Kubelet
	k.DryRun, k.Out = p.DryRun, p.Out
	if k.Issue == nil {
		k.Issue, k.IssuedHere = p.localIssuer(), true
	}
	return &k
}
