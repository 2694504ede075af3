package upgrade

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
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
	old, err := boundedread.ReadFile(path, boundedread.MaxFile)
	switch {
	case err == nil && bytes.Equal(old, doc):
		return res, fixMode(path, opts.ConfigMode())
	case err == nil:
		if res.Backup, err = backUp(tmpDir, "kubeadm-kubelet-config", kubelet.ConfigFile, old); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "[upgrade] Backed up the kubelet's configuration to %q\n", res.Backup)
	case !errors.Is(err, fs.ErrNotExist):
		return res, err
	}
	fmt.Fprintf(out, "[kubelet-start] Writing kubelet configuration to file %q\n", path)
	if err := os.MkdirAll(kubeletDir, 0o755); err != nil {
		return res, err
	}
	if err := atomicfile.Write(path, doc, opts.ConfigMode()); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}

// fixMode gives path mode when it has another one (a file already holding
// the right content, written before the mode changed).
func fixMode(path string, mode os.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() == mode {
		return nil
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", path, err)
	}
	return nil
}

// KeepDryRunCopy writes, under --dry-run, a copy of a file the upgrade
// would write into the dry-run folder dir, under its own name, so that
// scripts can read or diff what was printed. With dir "" it writes nothing.
func KeepDryRunCopy(dir, name string, data []byte, mode os.FileMode) error {
	if dir == "" {
		return nil
	}
	if err := atomicfile.Write(filepath.Join(dir, name), data, mode); err != nil {
		return fmt.Errorf("writing the dry run's copy of %s: %w", name, err)
	}
	return nil
}

// backUp copies data into a new folder under tmpDir whose name starts with
// prefix, as name, and returns the copy's path.
func backUp(tmpDir, prefix, name string, data []byte) (string, error) {
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(tmpDir, prefix)
	if err != nil {
		return "", fmt.Errorf("making a backup folder for %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	return path, atomicfile.Write(path, data, kubelet.FileMode)
}

// RemoveKubeletFlags takes the flags called one of names out of the
// kubelet's kubeadm-flags.env in kubeletDir, after copying the file into a
// new "kubeadm-kubelet-env*" folder under tmpDir (backup is that copy). It
// returns the flags removed; nothing is written when there are none, or
// when the file does not exist. With dryRun set it only says what it would
// do, and writes the file it would leave into dryRunDir unless that is "".
// Running it again changes nothing.
func RemoveKubeletFlags(kubeletDir, tmpDir string, names []string, dryRun bool, dryRunDir string, out io.Writer) (backup string, removed []kubeadm.Arg, err error) {
	data, err := kubelet.ReadFlagsEnv(kubeletDir)
	if err != nil || data == nil {
		return "", nil, err
	}
	path := filepath.Join(kubeletDir, kubelet.FlagsEnvFile)
	updated, removed := kubelet.WithoutFlags(data, names...)
	if len(removed) == 0 {
		return "", nil, nil
	}
	if dryRun {
		fmt.Fprintf(out, "[dryrun] Would remove %s from %q, leaving:\n%s\n", flagList(removed), path, updated)
		if err := KeepDryRunCopy(dryRunDir, kubelet.FlagsEnvFile, updated, kubelet.FileMode); err != nil {
			return "", nil, err
		}
		return "", removed, nil
	}
	if backup, err = backUp(tmpDir, "kubeadm-kubelet-env", kubelet.FlagsEnvFile, data); err != nil {
		return "", nil, err
	}
	fmt.Fprintf(out, "[upgrade] Backed up the kubelet's flags to %q\n", backup)
	if err := atomicfile.Write(path, updated, kubelet.FileMode); err != nil {
		return backup, nil, fmt.Errorf("rewriting %s: %w", path, err)
	}
	fmt.Fprintf(out, "[upgrade] Removed %s from %q\n", flagList(removed), path)
	return backup, removed, nil
}

// flagList names flags as "--a, --b".
func flagList(args []kubeadm.Arg) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = "--" + a.Name
	}
	return strings.Join(names, ", ")
}
