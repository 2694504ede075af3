package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/kubeadm-go/kubeadm/internal/phases/initphases"
)

// Environment variables that choose where a dry run writes its files, as
// upstream names them (tests set them to run without root).
const (
	initDryRunDirEnv    = "KUBEADM_INIT_DRYRUN_DIR"
	joinDryRunDirEnv    = "KUBEADM_JOIN_DRYRUN_DIR"
	upgradeDryRunDirEnv = "KUBEADM_UPGRADE_DRYRUN_DIR"
)

// The names of the dry-run folders before their random suffix, upstream's
// (seen with upstream v1.37.2: "kubeadm-upgrade-node-dryrun2995176182").
const (
	initDryRunPrefix         = "kubeadm-init-dryrun"
	joinDryRunPrefix         = "kubeadm-join-dryrun"
	upgradeApplyDryRunPrefix = "kubeadm-upgrade-apply-dryrun"
	upgradeNodeDryRunPrefix  = "kubeadm-upgrade-node-dryrun"
)

// dryRunParent is the folder that holds the dry runs' folders.
const dryRunParent = initphases.KubernetesDir + "/tmp"

// makeDryRunDir creates the folder a dry run writes every file into, and
// says so on w: the folder the environment variable env names, as with
// upstream's (created if missing); else, as upstream's, a new folder named
// prefix plus a random suffix in parent (dryRunParent: /etc/kubernetes/tmp).
//
// As upstream's, the folder is flat: certificates and keys (with their
// etcd/ sub-folder), kubeconfig files, manifests and the kubelet's files
// side by side, so a script that reads upstream's dry-run folder reads
// ours.
func makeDryRunDir(env, parent, prefix string, w io.Writer) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("creating the dry-run folder %s (from %s): %w", dir, env, err)
		}
		fmt.Fprintf(w, "[dryrun] Writing every file into %s (from %s) instead of its real place\n", dir, env)
		return dir, nil
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("creating the dry-run folder: %w", err)
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("creating the dry-run folder: %w", err)
	}
	fmt.Fprintf(w, "[dryrun] Writing every file into %s instead of its real place (set %s to choose the folder)\n", dir, env)
	return dir, nil
}
