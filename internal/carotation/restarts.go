package carotation

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/pki"
)

// The components a changed file may need restarted, in the order they
// are restarted.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kubelet           = "kubelet"
)

// restartOrder: etcd before the API server, which needs it, and the API
// server before its clients.
var restartOrder = []string{Etcd, APIServer, ControllerManager, Scheduler, Kubelet}

// pendingFile lists, one a line, the components that must still read
// their changed files again. It is written before the files change.
type pendingFile string

func pendingPath(dir string) pendingFile { return pendingFile(filepath.Join(dir, "pending-restarts")) }

func (p pendingFile) read() ([]string, error) {
	data, err := boundedread.ReadFile(string(p), boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Fields(string(data)) {
		if slices.Contains(restartOrder, l) && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// write records names (in restart order); none removes the file.
func (p pendingFile) write(names []string) error {
	var lines []string
	for _, c := range restartOrder {
		if slices.Contains(names, c) {
			lines = append(lines, c+"\n")
		}
	}
	if len(lines) == 0 {
		err := os.Remove(string(p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(string(p)), pki.CertDirMode); err != nil {
		return err
	}
	return atomicfile.Write(string(p), []byte(strings.Join(lines, "")), 0o600)
}
