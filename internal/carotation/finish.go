package carotation

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/bootstraptoken"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

func orNobody(component string) string {
	if component == "" {
		return "its users"
	}
	return component
}

// Finish drops the previous CAs on this control-plane node and in the
// cluster (phase finish):
//
//  1. it refuses while a certificate of this node, or a Node's kubelet
//     client certificate (KubeletClientCAAnnotation), is not of the new
//     CA yet, and until ServiceAccountKeyGrace has passed since the new
//     service-account key began to sign, unless DropOldServiceAccountKey;
//  2. ca.crt, front-proxy-ca.crt, etcd/ca.crt and the kubeconfig files
//     trust the new CA alone, sa.pub lists the new service-account key
//     alone; the controller manager's manifest names ca.crt and ca.key
//     again, as init writes it; etcd, the API server (both on the new
//     etcd CA's certificates since sign; one restart for the etcd CA and
//     sa.pub), the controller manager, the scheduler and the kubelet
//     restart one at a time;
//  3. cluster-info and extension-apiserver-authentication list the new
//     CAs alone, and the step waits until every kube-root-ca.crt does;
//  4. the Nodes' records and the rotation's folder are removed.
//
// After the folder is gone there is nothing left to finish: run again, it
// changes nothing.
func (p *ControlPlane) Finish(ctx context.Context) error {
	if _, err := os.Stat(p.Dir()); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(p.Out, "[rotate-ca] No rotation under way (no %s): nothing to finish\n", p.Dir())
		return nil
	}
	states, err := p.readAll()
	if err == nil {
		err = p.signed(states)
	}
	if err != nil && p.DryRun {
		fmt.Fprintf(p.Out, "[rotate-ca] Would drop the old CAs, once this is done: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	cluster := states[0]
	if !p.DryRun {
		if err := checkNodes(ctx, p.Client, KubeletClientCAAnnotation, bootstraptoken.CACertHash(cluster.Next), "sign"); err != nil {
			return err
		}
	}
	sa, err := ReadSA(p.CertDir)
	if err != nil {
		return err
	}
	if err := p.saGraceOver(ctx, sa); err != nil {
		return err
	}
	want := map[string]Bundle{}
	var changes []change
	for _, s := range states {
		path, b := pki.CertPath(p.CertDir, s.CA.BaseName), Bundle{s.Next}
		want[s.CA.Name] = b
		changes = append(changes, change{path, "the new " + s.CA.Description + " alone", caReaders(s.CA), false, func(dry bool) (bool, error) {
			return writeBundle(path, b, dry)
		}})
	}
	clusterWant, frontWant := want[pki.CAName], want[pki.FrontProxyCAName]
	// Other control-plane nodes that still trust the old CAs would publish
	// them again (their controller manager's root CA, their API server's
	// CA files): only the last node to finish drops them from the cluster.
	lagging, err := p.lagging(ctx, TrustedAnnotation, trustsOnly(caHash(cluster.Next)))
	if err != nil {
		return err
	}
	manifest := filepath.Join(p.ManifestDir, ControllerManager+".yaml")
	for _, k := range p.kubeconfigs() {
		path := k.path
		changes = append(changes, change{path, "certificate-authority-data: the new CA alone", k.restarts(), false, func(dry bool) (bool, error) {
			return setKubeconfigCAs(path, clusterWant, dry)
		}})
	}
	changes = append(changes, change{sa.PubPath, "the new service-account public key alone", []string{APIServer}, false, func(dry bool) (bool, error) {
		return sa.writePublicKeys([]crypto.PublicKey{sa.Key.Public()}, dry)
	}})
	changes = append(changes, change{manifest, "flags " + signingCertFlag + " and " + signingKeyFlag + " back to ca.crt and ca.key", []string{ControllerManager}, true, func(dry bool) (bool, error) {
		return setSigningFlags(manifest, "ca.crt", "ca.key", dry)
	}})
	return p.apply(ctx, changes, func(ctx context.Context) error {
		if p.DryRun {
			fmt.Fprintf(p.Out, "[rotate-ca] Would check that every Node's kubelet uses a client certificate of the new CA\n")
			fmt.Fprintf(p.Out, "[rotate-ca] Would make cluster-info and extension-apiserver-authentication list the new CAs alone, wait until every kube-root-ca.crt does, and remove %s\n", p.Dir())
			return nil
		}
		if len(lagging) > 0 {
			if err := p.kubelet().RecordTrust(ctx, clusterWant); err != nil {
				return err
			}
			if err := os.RemoveAll(p.Dir()); err != nil {
				return fmt.Errorf("removing the rotation's folder: %w", err)
			}
			fmt.Fprintf(p.Out, "[rotate-ca] Removed %s: this node trusts the new CAs alone; the finish phase of the last control-plane node (%v are left) drops the old ones from what the cluster publishes\n", p.Dir(), lagging)
			return nil
		}
		changed, err := updateClusterInfo(ctx, p.Client, func(Bundle) Bundle { return clusterWant })
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(p.Out, "[rotate-ca] The cluster-info ConfigMap lists the new cluster CA alone\n")
		}
		fmt.Fprintf(p.Out, "[rotate-ca] Waiting until every kube-root-ca.crt ConfigMap and extension-apiserver-authentication hold the new CAs alone\n")
		if err := p.waitDropped(ctx, clusterWant, frontWant); err != nil {
			return err
		}
		if err := p.forgetNodes(ctx); err != nil {
			return err
		}
		if err := deleteShared(ctx, p.Client); err != nil {
			return err
		}
		if err := os.RemoveAll(p.Dir()); err != nil {
			return fmt.Errorf("removing the rotation's folder: %w", err)
		}
		fmt.Fprintf(p.Out, "[rotate-ca] Removed %s: the rotation is finished on this node\n", p.Dir())
		return nil
	})
}

// signed checks that the sign step made the new CAs sign every
// certificate of this node.
func (p *ControlPlane) signed(states []*CAState) error {
	for _, s := range states {
		if !s.Signer.Equal(s.Next) {
			return fmt.Errorf("the new CAs do not sign yet: run the sign phase first")
		}
	}
	cluster := states[0]
	left, err := p.leftToSign(nextOf(states))
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("%v are not signed by the new CAs yet: run the sign phase first", left)
	}
	cred, err := p.Kubelet.read()
	if err != nil {
		return err
	}
	if cred.cert.CheckSignatureFrom(cluster.Next) != nil {
		return fmt.Errorf("the kubelet's client certificate is not signed by the new CA yet: run the sign phase first")
	}
	sa, err := ReadSA(p.CertDir)
	if err != nil {
		return err
	}
	if !sa.nextSigns() || !pki.PublicKeysEqual(sa.Accepted[0], sa.Key.Public()) {
		return fmt.Errorf("the new service-account key does not sign yet: run the sign phase first")
	}
	if _, ok, err := p.SASignedAt(); err != nil || !ok {
		return errors.Join(err, fmt.Errorf("no record of when the new service-account key began to sign (%s): run the sign phase first", p.saSignedPath()))
	}
	return nil
}

// saGraceOver fails until ServiceAccountKeyGrace has passed since the new
// service-account key began to sign, unless DropOldServiceAccountKey: a
// token the old key signed may be in use until then. A dry run says so.
func (p *ControlPlane) saGraceOver(ctx context.Context, sa *SAState) error {
	if len(sa.Accepted) == 1 {
		return nil // dropped already
	}
	at, ok, err := p.SASignedAt()
	if err != nil || !ok {
		return err // a dry run before sign
	}
	// The other control-plane nodes' API servers signed with the old key
	// until their own sign step.
	if at, err = latestSASigned(ctx, p.Client, at); err != nil {
		return err
	}
	until := at.Add(ServiceAccountKeyGrace)
	left := until.Sub(now(p.KeyOptions))
	switch {
	case left <= 0:
		return nil
	case p.DropOldServiceAccountKey:
		fmt.Fprintf(p.Out, "[rotate-ca] Dropping the old service-account key %v before %s, as asked: the tokens only it signed stop working\n", left.Round(time.Second), until.UTC().Format(time.RFC3339))
		return nil
	case p.DryRun:
		fmt.Fprintf(p.Out, "[rotate-ca] Would refuse until %s (an hour after the new service-account key began to sign), unless told to drop the old key anyway\n", until.UTC().Format(time.RFC3339))
		return nil
	}
	return fmt.Errorf("the new service-account key signs since %s, and the Pods' tokens the old key signed may be used until the kubelet replaces them, within an hour: run finish again after %s, or drop the old key now with --%s (tokens only it signed, of Pods that asked for a longer lifetime or of legacy token Secrets, stop working)",
		at.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), DropOldServiceAccountKeyFlag)
}

// checkNodes fails, naming them, while some Node's annotation key does
// not name the CA hash; then run the phase named on those nodes.
func checkNodes(ctx context.Context, c kubernetes.Interface, key, hash, phase string) error {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the Nodes: %w", err)
	}
	var left []string
	for _, n := range nodes.Items {
		if !slices.Contains(strings.Split(n.Annotations[key], ","), hash) {
			left = append(left, n.Name)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the Nodes %v have not recorded the new CA (annotation %s): run \"kubeadm certs rotate-ca phase %s\" on those nodes first", left, key, phase)
	}
	return nil
}

// forgetNodes removes the rotation's annotations from every Node.
func (p *ControlPlane) forgetNodes(ctx context.Context) error {
	nodes, err := p.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the Nodes: %w", err)
	}
	keys := []string{TrustedAnnotation, KubeletClientCAAnnotation, SASignedAnnotation}
	patch := []byte(`{"metadata":{"annotations":{"` + strings.Join(keys, `":null,"`) + `":null}}}`)
	for _, n := range nodes.Items {
		if !slices.ContainsFunc(keys, func(k string) bool { _, ok := n.Annotations[k]; return ok }) {
			continue
		}
		if _, err := p.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("removing the rotation's annotations from the Node %s: %w", n.Name, err)
		}
	}
	return nil
}

// waitDropped makes cluster trust objects list want alone: the API server
// merges what extension-apiserver-authentication holds with its own CAs
// and never drops one before it expires, so the step writes it back
// until the API server, having read the new CA files, leaves it so.
func (p *ControlPlane) waitDropped(ctx context.Context, clusterWant, frontWant Bundle) error {
	check := func(cm corev1.ConfigMap, key string, want Bundle) error {
		err := holdsOnly(cm, key, want)
		if err != nil && cm.Name == extensionAuthConfigMap {
			if werr := p.dropFromAuth(ctx, clusterWant, frontWant); werr != nil {
				return errors.Join(err, werr)
			}
		}
		return err
	}
	// Twice, a few looks apart: an API server that had not read its CA
	// files yet when the ConfigMap was written puts the old CA back.
	for range 2 {
		if err := p.waitPublished(ctx, clusterWant, frontWant, check); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * p.interval()):
		}
	}
	return nil
}

// The ConfigMap in which the API server publishes the CAs it trusts for
// client certificates and front proxies.
const extensionAuthConfigMap = "extension-apiserver-authentication"

// holdsOnly checks that key of cm holds exactly the certificates of want.
func holdsOnly(cm corev1.ConfigMap, key string, want Bundle) error {
	if err := holds(cm, key, want); err != nil {
		return err
	}
	got, _ := ParseBundle([]byte(cm.Data[key]))
	if len(got) != len(want) {
		return fmt.Errorf("%s/%s %s still holds %d CAs, not %d", cm.Namespace, cm.Name, key, len(got), len(want))
	}
	return nil
}

// dropFromAuth writes the two CA keys of extension-apiserver-authentication
// as clusterWant and frontWant when they hold more.
func (p *ControlPlane) dropFromAuth(ctx context.Context, clusterWant, frontWant Bundle) error {
	cms := p.Client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	cm, err := cms.Get(ctx, extensionAuthConfigMap, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	for key, want := range map[string]Bundle{"client-ca-file": clusterWant, "requestheader-client-ca-file": frontWant} {
		if _, ok := cm.Data[key]; ok && holdsOnly(*cm, key, want) != nil {
			cm.Data[key] = string(want.PEM())
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
