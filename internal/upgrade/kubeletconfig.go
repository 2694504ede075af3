package upgrade

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/kubelet"
)

// KubeletConfigResult says what WriteKubeletConfig did.
type KubeletConfigResult struct {
	// Changed is false when config.yaml already held the new content.
	Changed bool
	// Backup is the copy of the previous config.yaml ("" when unchanged
	// or when there was none).
	Backup string
}

// WriteKubeletConfig rewrites the kubelet's config.yaml in kubeletDir from
// the cluster's KubeletConfiguration with this node's settings (opts), as
// init and join write it. The previous file is first copied into a new
// "kubeadm-kubelet-config*" folder under tmpDir. The kubelet is not
// restarted: it reads the file when it starts (after its own upgrade).
func WriteKubeletConfig(kubeletDir, tmpDir string, cfg *kubeletv1beta1.KubeletConfiguration, opts kubelet.ConfigOptions, out io.Writer) (KubeletConfigResult, error) {
	var res KubeletConfigResult
	doc, err := kubelet.Config(cfg, opts, out)
	if err != nil {
		return res, err
	}
	path := filepath.Join(kubeletDir, kubelet.ConfigFile)
	old, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(old, doc):
		return res, nil
	case err == nil:
		if err := os.MkdirAll(tmpDir, 0o700); err != nil {
			return res, err
		}
		dir, err := os.MkdirTemp(tmpDir, "kubeadm-kubelet-config")
		if err != nil {
			return res, fmt.Errorf("making the backup folder of the kubelet's configuration: %w", err)
		}
		res.Backup = filepath.Join(dir, kubelet.ConfigFile)
		fmt.Fprintf(out, "[upgrade] Backing up the kubelet's configuration to %q\n", res.Backup)
		if err := atomicfile.Write(res.Backup, old, 0o644); err != nil {
			return res, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return res, err
	}
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet configuration to file %q\n", path)
	if err := os.MkdirAll(kubeletDir, 0o755); err != nil {
		return res, err
	}
	if err := atomicfile.Write(path, doc, 0o644); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}
