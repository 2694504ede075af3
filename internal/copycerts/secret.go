package copycerts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/apiclient"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// Names and values of the objects Upload writes, as upstream kubeadm
// writes them.
const (
	// SecretName is the Secret in kube-system holding the encrypted files.
	SecretName = "kubeadm-certs"
	// RoleName names the Role and RoleBinding that let bootstrap tokens
	// read the Secret (joining nodes authenticate with one).
	RoleName = "kubeadm:kubeadm-certs"
	// NodeBootstrapTokenGroup is the group of kubeadm's bootstrap tokens.
	NodeBootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
	// TokenTTL is how long the Secret lives: it is owned by a bootstrap
	// token Secret that expires after this long, and the garbage collector
	// deletes the Secret with its owner.
	TokenTTL = 2 * time.Hour
	// TokenDescription is the owner token's description.
	TokenDescription = "Proxy for managing TTL for the kubeadm-certs secret"
)

// UploadOptions say what Upload stores.
type UploadOptions struct {
	// Files are the files to store (see Files).
	Files []File
	// Key is the hex-encoded certificate key.
	Key string
	// Now dates the owner token's expiry (Now + TokenTTL).
	Now time.Time
	// NewToken makes the owner token, "<id>.<secret>"; nil makes a random
	// one.
	NewToken func() (string, error)
}

// Upload encrypts opts.Files with opts.Key into the kube-system Secret
// SecretName, owned by a new bootstrap token Secret that expires after
// TokenTTL and grants nothing (it has no usages), and lets kubeadm's
// bootstrap tokens read it through the Role and RoleBinding RoleName. A
// file that does not exist is stored as an empty entry. Nothing is written
// when the key is malformed, a file cannot be read, or the cluster CA or
// front-proxy CA key is missing (an external CA's keys are not kubeadm's to
// spread).
//
// Upload converges: running it again replaces the Secret's content and
// owner with a fresh token, as upstream kubeadm does; the older owner
// tokens expire on their own.
func Upload(ctx context.Context, c kubernetes.Interface, opts UploadOptions) error {
	if err := Store(ctx, c, SecretName, opts); err != nil {
		return err
	}
	role, binding := RBAC()
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().Roles(metav1.NamespaceSystem), role); err != nil {
		return fmt.Errorf("storing Role %s/%s: %w", metav1.NamespaceSystem, RoleName, err)
	}
	if err := apiclient.CreateOrUpdate(ctx, c.RbacV1().RoleBindings(metav1.NamespaceSystem), binding); err != nil {
		return fmt.Errorf("storing RoleBinding %s/%s: %w", metav1.NamespaceSystem, RoleName, err)
	}
	return nil
}

// Store encrypts opts.Files with opts.Key into the kube-system Secret
// name, owned by a new bootstrap token Secret that expires after TokenTTL
// and grants nothing, as Upload does, without granting anyone a read:
// only a cluster administrator reads it (Fetch).
func Store(ctx context.Context, c kubernetes.Interface, name string, opts UploadOptions) error {
	key, err := ParseKey(opts.Key)
	if err != nil {
		return err
	}
	data, err := sealFiles(opts.Files, key)
	if err != nil {
		return err
	}
	newToken := opts.NewToken
	if newToken == nil {
		newToken = bootstraputil.GenerateBootstrapToken
	}
	token, err := newToken()
	if err != nil {
		return fmt.Errorf("generating the owner token of Secret %s/%s: %w", metav1.NamespaceSystem, SecretName, err)
	}
	var owner *corev1.Secret
	err = apiclient.RetryWrite(ctx, func() error {
		var err error
		owner, err = c.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, ownerToken(token, opts.Now), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// An earlier attempt was stored though its answer was lost.
			owner, err = c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, ownerToken(token, opts.Now).Name, metav1.GetOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating the owner token of Secret %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	if err := apiclient.CreateOrUpdate(ctx, c.CoreV1().Secrets(metav1.NamespaceSystem), certsSecret(name, data, owner)); err != nil {
		return fmt.Errorf("storing Secret %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return nil
}

// Fetch reads the kube-system Secret name that Store wrote and decrypts
// its entries with the hex-encoded key (Open). A missing Secret is an
// error wrapping fs.ErrNotExist.
func Fetch(ctx context.Context, c kubernetes.Interface, name, hexKey string) (map[string][]byte, error) {
	if _, err := ParseKey(hexKey); err != nil {
		return nil, err
	}
	secret, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the Secret %s/%s does not exist (it is deleted %v after it was stored): %w", metav1.NamespaceSystem, name, TokenTTL, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return Open(secret, hexKey)
}

// sealFiles reads and encrypts every file, refusing an external CA.
func sealFiles(files []File, key []byte) (map[string][]byte, error) {
	data := make(map[string][]byte, len(files))
	for _, f := range files {
		b, err := boundedread.ReadFile(f.Path, boundedread.MaxFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if f.Key == caKeyKey || f.Key == frontProxyCAKeyKey {
				return nil, fmt.Errorf("cannot upload the control-plane certificates: %s does not exist, so the cluster uses an external CA or front-proxy CA, whose keys kubeadm does not distribute", f.Path)
			}
			data[f.Key] = []byte{}
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s for Secret %s/%s: %w", f.Path, metav1.NamespaceSystem, SecretName, err)
		}
		sealed, err := Encrypt(b, key)
		if err != nil {
			return nil, fmt.Errorf("encrypting %s: %w", f.Path, err)
		}
		data[f.Key] = sealed
	}
	return data, nil
}

// ownerToken is the bootstrap token Secret that owns the certificates
// Secret: it only carries an expiry, no usage, so it authenticates nobody.
func ownerToken(token string, now time.Time) *corev1.Secret {
	id, secret, _ := strings.Cut(token, ".")
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      bootstrapapi.BootstrapTokenSecretPrefix + id,
			Namespace: metav1.NamespaceSystem,
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:          []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:      []byte(secret),
			bootstrapapi.BootstrapTokenExpirationKey:  []byte(now.Add(TokenTTL).UTC().Format(time.RFC3339)),
			bootstrapapi.BootstrapTokenDescriptionKey: []byte(TokenDescription),
		},
	}
}

// certsSecret is the Secret name holding the sealed files, owned by owner.
func certsSecret(name string, data map[string][]byte, owner *corev1.Secret) *corev1.Secret {
	yes := true
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: metav1.NamespaceSystem,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "v1",
				Kind:               "Secret",
				Name:               owner.Name,
				UID:                owner.UID,
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// RBAC returns the Role that may read Secret SecretName and the RoleBinding
// granting it to kubeadm's bootstrap tokens.
func RBAC() (*rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: RoleName, Namespace: metav1.NamespaceSystem}
	return &rbacv1.Role{
			ObjectMeta: meta,
			Rules: []rbacv1.PolicyRule{{
				APIGroups:     []string{""},
				Resources:     []string{"secrets"},
				ResourceNames: []string{SecretName},
				Verbs:         []string{"get"},
			}},
		}, &rbacv1.RoleBinding{
			ObjectMeta: meta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: NodeBootstrapTokenGroup}},
		}
}

// Open decrypts every entry of a certificates Secret with the hex-encoded
// key. Empty entries (files the uploader did not have) stay empty. It fails
// on the first entry that does not decrypt, naming the entry, not the key.
func Open(secret *corev1.Secret, hexKey string) (map[string][]byte, error) {
	key, err := ParseKey(hexKey)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string][]byte, len(names))
	for _, k := range names {
		sealed := secret.Data[k]
		if len(sealed) == 0 {
			out[k] = nil
			continue
		}
		plain, err := Decrypt(sealed, key)
		if err != nil {
			return nil, fmt.Errorf("decrypting %q of Secret %s/%s: %w", k, secret.Namespace, secret.Name, err)
		}
		out[k] = plain
	}
	return out, nil
}

// DownloadOptions say what Download fetches and how it checks it.
type DownloadOptions struct {
	// Files are the files to write (see Files): each must have an entry in
	// the Secret.
	Files []File
	// Key is the hex-encoded certificate key.
	Key string
	// TrustedCA is the PEM bundle of the cluster CA the joining node
	// trusts (from discovery); when set, the Secret's ca.crt must be one
	// of its certificates.
	TrustedCA []byte
}

// Download fetches Secret SecretName, decrypts it with opts.Key, checks
// it (see checkEntries: every file has an entry, each entry parses as what
// its name says, each key belongs to its certificate, the CAs are CAs and
// ca.crt is the trusted one) and only then writes each file whose entry is
// not empty, with the file's mode, creating folders as needed. On any
// problem nothing is written and the error names every entry at fault,
// never the key. An empty entry (a file the uploader did not have, as an
// external CA's key) leaves its file alone. Idempotent: the same Secret
// and key write the same files.
func Download(ctx context.Context, c kubernetes.Interface, opts DownloadOptions) error {
	if _, err := ParseKey(opts.Key); err != nil {
		return err
	}
	secret, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the Secret %s/%s does not exist: the uploaded certificates are deleted %v after upload; upload them again with \"kubeadm init phase upload-certs --upload-certs\" on a control-plane node", metav1.NamespaceSystem, SecretName, TokenTTL)
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", metav1.NamespaceSystem, SecretName, err)
	}
	plain, err := Open(secret, opts.Key)
	if err != nil {
		return err
	}
	if err := checkEntries(plain, opts.Files, opts.TrustedCA); err != nil {
		return fmt.Errorf("the Secret %s/%s is refused and nothing is written: %w", metav1.NamespaceSystem, SecretName, err)
	}
	for _, f := range opts.Files {
		b := plain[f.Key]
		if len(b) == 0 {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), pki.CertDirMode); err != nil {
			return fmt.Errorf("creating the folder of %s: %w", f.Path, err)
		}
		if err := atomicfile.Write(f.Path, b, f.Mode); err != nil {
			return err
		}
	}
	return nil
}
