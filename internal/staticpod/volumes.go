package staticpod

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// Names of the volumes kubeadm mounts.
const (
	volumeK8sCerts   = "k8s-certs"
	volumeCACerts    = "ca-certs"
	volumeKubeconfig = "kubeconfig"
	volumeEtcdData   = "etcd-data"
	volumeEtcdCerts  = "etcd-certs"
	// External etcd certificate folders are "etcd-certs-0", "etcd-certs-1"...
	volumeExternalEtcdCertsPrefix = "etcd-certs-"
)

// caCertFolder is a folder of the host's trusted CA certificates that the
// API server and the controller manager see.
type caCertFolder struct {
	name, path string
	// always: mounted even when the folder is missing on the host.
	always bool
}

// caCertFolders are the CA certificate folders of the common Linux
// distributions. Only /etc/ssl/certs is always mounted; the others when
// they exist on the host.
func caCertFolders() []caCertFolder {
	return []caCertFolder{
		{name: volumeCACerts, path: "/etc/ssl/certs", always: true},
		{name: "etc-ca-certificates", path: "/etc/ca-certificates"},
		{name: "etc-pki-ca-trust", path: "/etc/pki/ca-trust"},
		{name: "etc-pki-tls-certs", path: "/etc/pki/tls/certs"},
		{name: "usr-share-ca-certificates", path: "/usr/share/ca-certificates"},
		{name: "usr-local-share-ca-certificates", path: "/usr/local/share/ca-certificates"},
	}
}

// mount is a host path volume and where the container sees it.
type mount struct {
	volume corev1.Volume
	mount  corev1.VolumeMount
}

// volumeSet holds a Pod's host path volumes by name; adding a name again
// replaces the earlier volume.
type volumeSet map[string]mount

func (s volumeSet) add(name, hostPath, mountPath string, readOnly bool, pathType corev1.HostPathType) {
	t := pathType
	s[name] = mount{
		volume: corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostPath, Type: &t}},
		},
		mount: corev1.VolumeMount{Name: name, MountPath: mountPath, ReadOnly: readOnly},
	}
}

// addExtra adds the user's extra volumes, which replace kubeadm's own of
// the same name.
func (s volumeSet) addExtra(extra []kubeadm.HostPathMount) {
	for _, v := range extra {
		s.add(v.Name, v.HostPath, v.MountPath, v.ReadOnly, v.PathType)
	}
}

// sorted returns the volumes and their mounts, both sorted by name.
func (s volumeSet) sorted() ([]corev1.Volume, []corev1.VolumeMount) {
	names := slices.Sorted(maps.Keys(s))
	vols := make([]corev1.Volume, 0, len(names))
	mounts := make([]corev1.VolumeMount, 0, len(names))
	for _, n := range names {
		vols = append(vols, s[n].volume)
		mounts = append(mounts, s[n].mount)
	}
	return vols, mounts
}

// addCACerts adds the host's CA certificate folders (see caCertFolders).
func (s volumeSet) addCACerts(o Options) {
	for _, f := range caCertFolders() {
		if f.always || o.exists(f.path) {
			s.add(f.name, f.path, f.path, true, corev1.HostPathDirectoryOrCreate)
		}
	}
}

// addExternalEtcdCerts mounts the folders holding the external etcd's CA,
// certificate and key files, unless another volume of the API server
// already covers them: folders under the certificates folder or a CA
// certificate folder, and folders under another one of the three, are
// left out. Prefixes compare as strings, as upstream kubeadm does, so
// "/etc/ssl/certs2" counts as under "/etc/ssl/certs". The folders left are
// sorted and named etcd-certs-0, etcd-certs-1...
func (s volumeSet) addExternalEtcdCerts(certificatesDir string, ext *kubeadm.ExternalEtcd) {
	covered := []string{certificatesDir}
	for _, f := range caCertFolders() {
		covered = append(covered, f.path)
	}
	dirs := map[string]bool{}
	for _, file := range []string{ext.CAFile, ext.CertFile, ext.KeyFile} {
		if file == "" {
			continue
		}
		dir := filepath.Dir(file)
		if hasAnyPrefix(dir, covered) {
			continue
		}
		dirs[dir] = true
	}
	var kept []string
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		others := make([]string, 0, len(dirs))
		for o := range dirs {
			if o != d {
				others = append(others, o)
			}
		}
		if !hasAnyPrefix(d, others) {
			kept = append(kept, d)
		}
	}
	sort.Strings(kept)
	for i, d := range kept {
		s.add(fmt.Sprintf("%s%d", volumeExternalEtcdCertsPrefix, i), d, d, true, corev1.HostPathDirectoryOrCreate)
	}
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
