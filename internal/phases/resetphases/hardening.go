package resetphases

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
)

// What the CISHardening feature gate leaves on a node, found by looking:
// reset needs no configuration to remove it, and removes nothing of a node
// made without the gate.

// hardeningFile is one file of the profile: content, when set, is what
// kubeadm wrote; a file that differs is the administrator's and is kept.
type hardeningFile struct {
	path    string
	content []byte
}

// hardeningFiles are the profile's files on this node that exist.
func hardeningFiles(d *Data) []hardeningFile {
	all := []hardeningFile{
		{path: cis.ApproverKubeconfig(d.KubernetesDir)},
		{path: cis.LegacyApproverKubeconfig(d.KubernetesDir)},
		{path: filepath.Join(d.KubernetesDir, filepath.Base(cis.AuditPolicyFile)), content: cis.AuditPolicy()},
		{path: filepath.Join(d.KubernetesDir, filepath.Base(cis.AdmissionConfigFile)), content: cis.AdmissionConfig()},
	}
	if d.ApproverBinary != "" {
		all = append(all, hardeningFile{path: d.ApproverBinary})
	}
	var out []hardeningFile
	for _, f := range all {
		if _, err := os.Lstat(f.path); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// cleanupHardening removes the profile's files (keeping an audit policy or
// admission configuration the administrator changed, and saying so), the
// folder of the approver's program when empty, and the etcd user and group
// when kubeadm made them. A dry run only says what it would remove.
func cleanupHardening(d *Data) error {
	files := hardeningFiles(d)
	made, err := rootless.MadeAccount(d.EtcDir, cis.EtcdUser, cis.EtcdUserComment)
	if err != nil {
		return err
	}
	if d.DryRun {
		for _, f := range files {
			fmt.Fprintf(d.Out, "[dryrun] Would delete %q (CISHardening), unless changed since kubeadm wrote it\n", f.path)
		}
		if made {
			fmt.Fprintf(d.Out, "[dryrun] Would remove the user and group %q that kubeadm made for etcd\n", cis.EtcdUser)
		}
		return nil
	}
	var errs []error
	for _, f := range files {
		if f.content != nil {
			got, err := boundedread.ReadFile(f.path, boundedread.MaxFile)
			if errors.Is(err, boundedread.ErrTooLarge) || err == nil && !bytes.Equal(got, f.content) {
				fmt.Fprintf(d.Out, "[reset] Keeping %q: it was changed since kubeadm wrote it\n", f.path)
				continue
			}
		}
		fmt.Fprintf(d.Out, "[reset] Deleting %q (CISHardening)\n", f.path)
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if f.content == nil && filepath.Dir(f.path) != d.KubernetesDir {
			// The approver's program: its folder goes too once empty.
			_ = os.Remove(filepath.Dir(f.path))
		}
	}
	if made {
		fmt.Fprintf(d.Out, "[reset] Removing the user and group %q that kubeadm made for etcd\n", cis.EtcdUser)
		if _, err := rootless.RemoveAccount(d.EtcDir, cis.EtcdUser, cis.EtcdUserComment); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
