package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
)

// Environment variables that choose where a dry run writes its files, as
// upstream names them (tests set them to run without root).
const (
	initDryRunDirEnv = "KUBEADM_INIT_DRYRUN_DIR"
	joinDryRunDirEnv = "KUBEADM_JOIN_DRYRUN_DIR"
)

// makeDryRunDir creates the folder a dry run writes every file into, named
// prefix plus a random suffix: under the folder the environment variable
// env names, else under the system's temporary folder, else (no such
// folder, as under a bare --rootfs) under /etc/kubernetes/tmp.
func makeDryRunDir(env, prefix string) (string, error) {
	parent := os.Getenv(env)
	if parent == "" {
		parent = os.TempDir()
	}
	if _, err := os.Stat(parent); err != nil {
		parent = filepath.Join(initphases.KubernetesDir, "tmp")
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", fmt.Errorf("creating the dry-run folder: %w", err)
		}
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("creating the dry-run folder: %w", err)
	}
	return dir, nil
}
