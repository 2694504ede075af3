package initphases

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// UploadCertsPhase, with --upload-certs, encrypts the certificate
// authorities and keys that all control-plane nodes share into the
// kube-system/kubeadm-certs Secret, which expires after two hours, so
// that "kubeadm join --control-plane --certificate-key ..." can fetch
// them. Without --upload-certs it only says it is skipped.
//
// When the configuration has no certificate key, the phase makes one and
// records it in Data.Cfg.CertificateKey (the one field of Cfg it writes),
// so show-join-command can print it. Running the phase again replaces the
// Secret's content with the same files, as upstream kubeadm does.
func UploadCertsPhase() workflow.Phase[*Data] {
	return workflow.Phase[*Data]{
		Name:  "upload-certs",
		Short: "Store the encrypted control-plane certificates in the kubeadm-certs Secret",
		Long: `Encrypt the certificate authorities and keys that every control-plane node
needs (cluster CA, front-proxy CA, service-account key pair, etcd CA or the
external etcd's client files) with the certificate key, and store them in the
kubeadm-certs Secret of the kube-system namespace. The Secret is deleted after
two hours. Nothing is uploaded without --upload-certs.`,
		Example: `  # Upload the certificates with a new key, and print it
  kubeadm init phase upload-certs --upload-certs`,
		InheritFlags: []string{"certificate-key", "config", "dry-run", "kubeconfig", "skip-certificate-key-print", "upload-certs"},
		Run:          runUploadCerts,
	}
}

func runUploadCerts(ctx context.Context, d *Data) error {
	if !d.UploadCerts {
		fmt.Fprintf(d.Out, "[upload-certs] Skipping phase: the certificates are only uploaded with --upload-certs\n")
		return nil
	}
	if d.Cfg.CertificateKey == "" {
		key, err := copycerts.NewKey()
		if err != nil {
			return err
		}
		d.Cfg.CertificateKey = key
	}
	c, err := d.Client(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "[upload-certs] Storing the encrypted control-plane certificates in Secret %q in namespace %q\n",
		copycerts.SecretName, metav1.NamespaceSystem)
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	err = copycerts.Upload(ctx, c, copycerts.UploadOptions{
		Files: copycerts.Files(d.CertDir, d.Cfg.Etcd),
		Key:   d.Cfg.CertificateKey,
		Now:   now(),
	})
	if err != nil {
		return err
	}
	if !d.SkipCertificateKeyPrint {
		// Printed on purpose, in upstream's two-line shape that scripts read.
		fmt.Fprintf(d.Out, "[upload-certs] Using certificate key:\n%s\n", d.Cfg.CertificateKey)
	}
	return nil
}

// CheckUploadCerts refuses --upload-certs when the cluster CA or the
// front-proxy CA in d.CertDir is external (its certificate without its
// key): the kubeadm-certs Secret exists to hand those keys to joining
// control-plane nodes. Run before any phase, as upstream kubeadm does, so
// that an init asked for both changes nothing instead of failing with the
// control plane already running.
func CheckUploadCerts(d *Data) error {
	if !d.UploadCerts {
		return nil
	}
	for _, name := range []string{pki.CAName, pki.FrontProxyCAName} {
		ca, _ := pki.LookupCert(name)
		if pki.KeylessCA(d.CertDir, ca) {
			return fmt.Errorf("--upload-certs cannot be used with an external CA: %s exists without its key %s, which joining control-plane nodes would need",
				pki.CertPath(d.CertDir, ca.BaseName), pki.KeyPath(d.CertDir, ca.BaseName))
		}
	}
	return nil
}
