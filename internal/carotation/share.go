package carotation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/copycerts"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// SecretName is the kube-system Secret that carries a rotation's new CAs
// and service-account key, encrypted with a certificate key as
// "kubeadm init --upload-certs" carries the current ones, from the node
// whose prepare phase made them to the other control-plane nodes. Only
// cluster administrators may read it; it lives copycerts.TokenTTL, and
// the finish phase of the last control-plane node deletes it.
const SecretName = "kubeadm-rotate-ca"

// sharedFiles are the files of Folder the other control-plane nodes need:
// each new CA's pair (entry names as the kubeadm-certs Secret's) and the
// new service-account key; the keys first, so a download killed half-way
// leaves no certificate without its key.
func sharedFiles(cfg *kubeadm.ClusterConfiguration, certDir string) []copycerts.File {
	var keys, certs []copycerts.File
	for _, ca := range Rotated(cfg) {
		entry := strings.ReplaceAll(ca.BaseName, "/", "-")
		keys = append(keys, copycerts.File{Key: entry + ".key", Path: pki.KeyPath(certDir, nextBase(ca)), Mode: pki.KeyMode})
		certs = append(certs, copycerts.File{Key: entry + ".crt", Path: pki.CertPath(certDir, nextBase(ca)), Mode: certMode(cfg)})
	}
	keys = append(keys, copycerts.File{Key: "sa.key", Path: filepath.Join(certDir, Folder, "sa.key"), Mode: pki.KeyMode})
	return append(keys, certs...)
}

// Upload stores the new CAs and service-account key of this node's
// Folder in SecretName, encrypted with the hex-encoded certificate key.
func Upload(ctx context.Context, c kubernetes.Interface, cfg *kubeadm.ClusterConfiguration, certDir, key string, now time.Time) error {
	staged, err := Staged(cfg, certDir)
	if err != nil {
		return err
	}
	if !staged {
		return fmt.Errorf("no new CAs in %s to upload: run the prepare phase first", filepath.Join(certDir, Folder))
	}
	return copycerts.Store(ctx, c, SecretName, copycerts.UploadOptions{Files: sharedFiles(cfg, certDir), Key: key, Now: now})
}

// Download writes the new CAs and service-account key of SecretName,
// decrypted with the hex-encoded certificate key, to this node's Folder.
// Nothing is written unless every entry is there and holds what its name
// says: each new CA a CA with the subject of the current one, and its key.
func Download(ctx context.Context, c kubernetes.Interface, cfg *kubeadm.ClusterConfiguration, certDir, key string, out io.Writer) error {
	plain, err := copycerts.Fetch(ctx, c, SecretName, key)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: store the new CAs again with \"kubeadm certs rotate-ca phase prepare --upload-certs\" on the control-plane node that made them", err)
	}
	if err != nil {
		return err
	}
	files := sharedFiles(cfg, certDir)
	var problems []error
	for _, ca := range Rotated(cfg) {
		entry := strings.ReplaceAll(ca.BaseName, "/", "-")
		cur, err := ReadCA(certDir, ca)
		if err != nil {
			return err
		}
		cert, cerr := pki.ParseCertPEM(plain[entry+".crt"])
		k, kerr := pki.ParseKeyPEM(plain[entry+".key"])
		switch {
		case cerr != nil || kerr != nil:
			problems = append(problems, fmt.Errorf("entries %s.crt and %s.key: %w", entry, entry, errors.Join(cerr, kerr)))
		case !cert.IsCA || !pki.PublicKeysEqual(cert.PublicKey, k.Public()):
			problems = append(problems, fmt.Errorf("entry %s.crt is not a CA of the key %s.key", entry, entry))
		case cert.Subject.String() != cur.Signer.Subject.String():
			problems = append(problems, fmt.Errorf("entry %s.crt is the CA %q, not a new %s (%q)", entry, cert.Subject, ca.Description, cur.Signer.Subject))
		}
	}
	if _, err := pki.ParseKeyPEM(plain["sa.key"]); err != nil {
		problems = append(problems, fmt.Errorf("entry sa.key: %w", err))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the Secret %s/%s is refused and nothing is written: %w", metav1.NamespaceSystem, SecretName, errors.Join(problems...))
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), pki.CertDirMode); err != nil {
			return err
		}
		if err := atomicfile.Write(f.Path, plain[f.Key], f.Mode); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "[rotate-ca] Downloaded the new CAs and service-account key from the Secret %s/%s to %s\n", metav1.NamespaceSystem, SecretName, filepath.Join(certDir, Folder))
	return nil
}

// deleteShared deletes SecretName, if it is there.
func deleteShared(ctx context.Context, c kubernetes.Interface) error {
	err := c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, SecretName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Secret %s/%s: %w", metav1.NamespaceSystem, SecretName, err)
	}
	return nil
}

// shared reports whether SecretName exists.
func shared(ctx context.Context, c kubernetes.Interface) (bool, error) {
	_, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
