package copycerts

import (
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// File is one file of the shared control-plane PKI as it travels in the
// Secret.
type File struct {
	// Key names the file's entry in the Secret, e.g. "etcd-ca.key".
	Key string
	// Path is where the file lives on a control-plane node.
	Path string
	// Mode is the file's permission bits when downloaded: 0600 for keys
	// and sa.pub (as kubeadm writes them), 0644 for certificates.
	Mode os.FileMode
}

// Secret keys of the certificate authorities' keys without which nothing
// can be uploaded: without them this cluster has an external CA, whose
// keys kubeadm must not spread.
const (
	caKeyKey           = "ca.key"
	frontProxyCAKeyKey = "front-proxy-ca.key"
)

// Files lists, in a fixed order, the files control-plane nodes share: the
// cluster CA, the service-account key pair and the front-proxy CA from
// certDir, and either the local etcd's CA (from certDir/etcd) or the
// client files of an external etcd (from the paths the configuration
// gives). These are upstream kubeadm's Secret keys.
func Files(certDir string, etcd kubeadm.Etcd) []File {
	files := []File{
		{Key: "ca.crt", Path: filepath.Join(certDir, "ca.crt"), Mode: pki.CertMode},
		{Key: caKeyKey, Path: filepath.Join(certDir, "ca.key"), Mode: pki.KeyMode},
		{Key: "sa.key", Path: filepath.Join(certDir, "sa.key"), Mode: pki.KeyMode},
		{Key: "sa.pub", Path: filepath.Join(certDir, "sa.pub"), Mode: pki.KeyMode},
		{Key: "front-proxy-ca.crt", Path: filepath.Join(certDir, "front-proxy-ca.crt"), Mode: pki.CertMode},
		{Key: frontProxyCAKeyKey, Path: filepath.Join(certDir, "front-proxy-ca.key"), Mode: pki.KeyMode},
	}
	if ext := etcd.External; ext != nil {
		for _, f := range []File{
			{Key: "external-etcd-ca.crt", Path: ext.CAFile, Mode: pki.CertMode},
			{Key: "external-etcd.crt", Path: ext.CertFile, Mode: pki.CertMode},
			{Key: "external-etcd.key", Path: ext.KeyFile, Mode: pki.KeyMode},
		} {
			if f.Path != "" {
				files = append(files, f)
			}
		}
		return files
	}
	return append(files,
		File{Key: "etcd-ca.crt", Path: filepath.Join(certDir, "etcd", "ca.crt"), Mode: pki.CertMode},
		File{Key: "etcd-ca.key", Path: filepath.Join(certDir, "etcd", "ca.key"), Mode: pki.KeyMode},
	)
}
