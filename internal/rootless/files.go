package rootless

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// Node says where a node keeps the files the components read.
type Node struct {
	CertDir       string
	KubeconfigDir string
	EtcdDataDir   string
	// LocalEtcd is set when the API server reaches a local etcd with the
	// client key kubeadm made; ExternalCA when the cluster CA's key is not
	// on this node.
	LocalEtcd, ExternalCA bool
}

// owned is one file and who should own it; mode 0 keeps the file's mode.
type owned struct {
	path     string
	uid, gid int64
	mode     os.FileMode
}

// files lists what component must be able to read on n.
func (a *Accounts) files(component string, n Node) ([]owned, error) {
	ids, ok := a.For(component)
	if !ok {
		return nil, fmt.Errorf("no user is known for %s", component)
	}
	own := func(paths ...string) []owned {
		var out []owned
		for _, p := range paths {
			out = append(out, owned{path: p, uid: ids.UID, gid: ids.GID})
		}
		return out
	}
	pki := func(name string) string { return filepath.Join(n.CertDir, name) }
	// The service-account signing key stays root's; both the API server and
	// the controller manager read it through their shared group.
	saKey := owned{path: pki("sa.key"), uid: 0, gid: a.SAKeyReadersGID, mode: 0o640}
	switch component {
	case staticpod.Etcd:
		return own(pki("etcd/server.key"), pki("etcd/peer.key"), n.EtcdDataDir), nil
	case staticpod.KubeAPIServer:
		var out []owned
		if n.LocalEtcd {
			out = own(pki("apiserver-etcd-client.key"))
		}
		out = append(out, own(pki("sa.pub"), pki("apiserver.key"), pki("apiserver-kubelet-client.key"), pki("front-proxy-client.key"))...)
		return append(out, saKey), nil
	case staticpod.KubeControllerManager:
		var out []owned
		if !n.ExternalCA {
			out = own(pki("ca.key"))
		}
		out = append(out, own(filepath.Join(n.KubeconfigDir, "controller-manager.conf"))...)
		return append(out, saKey), nil
	case staticpod.KubeScheduler:
		return own(filepath.Join(n.KubeconfigDir, "scheduler.conf")), nil
	}
	return nil, fmt.Errorf("no files are known for %s", component)
}

// Chown gives the files component reads on n to its user and group (the
// service-account key to the group of its readers, mode 0640). Files that
// already have the right owner and mode are left alone.
func (a *Accounts) Chown(component string, n Node) error {
	files, err := a.files(component, n)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Lchown(f.path, int(f.uid), int(f.gid)); err != nil {
			return fmt.Errorf("%s cannot run as non-root: giving %s to %d:%d: %w", component, f.path, f.uid, f.gid, err)
		}
		if f.mode != 0 {
			if err := os.Chmod(f.path, f.mode); err != nil {
				return fmt.Errorf("%s cannot run as non-root: %w", component, err)
			}
		}
	}
	return nil
}

// Apply makes pod, the static Pod of component, run as component's user:
// the Pod's user, group and supplementary groups, and a container that
// keeps no capability (the API server keeps the one to bind low ports)
// and, but for the API server, cannot gain privileges.
func (a *Accounts) Apply(pod *corev1.Pod, component string) error {
	ids, ok := a.For(component)
	if !ok {
		return fmt.Errorf("no user is known for %s", component)
	}
	ids.RunAs(pod, component == staticpod.KubeAPIServer)
	return nil
}

// RunAs makes every container of pod run as ids: the Pod's user, group and
// supplementary groups (when ids has any), and containers that keep no
// capability, but the one to bind low ports with bindLowPorts, and that
// cannot gain privileges otherwise.
func (ids IDs) RunAs(pod *corev1.Pod, bindLowPorts bool) {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	sc := pod.Spec.SecurityContext
	sc.RunAsUser, sc.RunAsGroup = new(ids.UID), new(ids.GID)
	if len(ids.SupplementalGroups) > 0 {
		sc.SupplementalGroups = append([]int64(nil), ids.SupplementalGroups...)
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		c.SecurityContext.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		if bindLowPorts {
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		} else {
			c.SecurityContext.AllowPrivilegeEscalation = new(false)
		}
	}
}
