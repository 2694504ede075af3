package initphases

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
	"github.com/kubeadm-go/kubeadm/internal/csrapprover"
	"github.com/kubeadm-go/kubeadm/internal/kubeadmbinary"
	"github.com/kubeadm-go/kubeadm/internal/kubeconfig"
	"github.com/kubeadm-go/kubeadm/internal/pki"
	"github.com/kubeadm-go/kubeadm/internal/rootless"
	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// This file applies the CISHardening feature gate's profile (package cis)
// to a control-plane node: the etcd user that owns etcd's data and runs
// it, the API server's audit policy, admission configuration and audit log
// folder, the certificates' modes, and the static Pod that approves the
// kubelets' serving certificates.

// hardened reports whether the CISHardening profile is on for d.
func hardened(d *Data) bool { return cis.Enabled(d.Cfg.FeatureGates) }

// hostPath is where the profile's fixed path p is on this node.
func hostPath(d *Data, p string) string {
	if d.HardeningRoot == "" {
		return p
	}
	return filepath.Join(d.HardeningRoot, p)
}

// etcdTLSFiles are the files under the certificate folder that etcd itself
// reads, so that its user owns them.
func etcdTLSFiles(certDir string) []string {
	var out []string
	for _, f := range []string{"ca.crt", "server.crt", "server.key", "peer.crt", "peer.key"} {
		out = append(out, filepath.Join(certDir, "etcd", f))
	}
	return out
}

// hardenEtcd prepares the node for etcd to run as the etcd user: the user
// and its group are made when missing, the data folder (and all it holds)
// given to them with mode 0700, and the certificates and keys etcd reads
// given to them with mode 0600. A dry run only says so. Idempotent.
func hardenEtcd(d *Data) error {
	if d.DryRun {
		fmt.Fprintf(d.Out, "[etcd] Would make sure the user and group %q exist, own %q and the files etcd reads in %q, and run etcd\n",
			cis.EtcdUser, d.Cfg.Etcd.Local.DataDir, filepath.Join(d.CertDir, "etcd"))
		return nil
	}
	ids, err := ensureEtcdAccount(d)
	if err != nil {
		return err
	}
	dataDir := d.Cfg.Etcd.Local.DataDir
	if err := chownTree(dataDir, ids); err != nil {
		return fmt.Errorf("giving etcd's data folder to the user %s: %w", cis.EtcdUser, err)
	}
	if err := os.Chmod(dataDir, cis.EtcdDataDirMode); err != nil {
		return fmt.Errorf("restricting etcd's data folder: %w", err)
	}
	for _, p := range etcdTLSFiles(d.CertDir) {
		if err := ownFile(p, ids, cis.FileMode); err != nil {
			return fmt.Errorf("etcd cannot run as the user %s: %w", cis.EtcdUser, err)
		}
	}
	return nil
}

// ensureEtcdAccount makes the etcd user and group when missing (marked as
// kubeadm's, for reset) and caches their IDs in d.
func ensureEtcdAccount(d *Data) (rootless.IDs, error) {
	if d.EtcdAccount != nil {
		return *d.EtcdAccount, nil
	}
	ids, err := rootless.EnsureAccount(d.EtcDir, cis.EtcdUser, cis.EtcdUserComment)
	if err != nil {
		return rootless.IDs{}, fmt.Errorf("making the user %s that etcd runs as: %w", cis.EtcdUser, err)
	}
	d.EtcdAccount = &ids
	return ids, nil
}

// applyEtcdUser makes the etcd Pod run as the etcd user, which must exist
// (hardenEtcd made it, or an earlier run). A dry run leaves the manifest
// running etcd as root when the user does not exist yet.
func applyEtcdUser(d *Data, pod *corev1.Pod) error {
	ids := d.EtcdAccount
	if ids == nil {
		found, ok, err := rootless.LookupAccount(d.EtcDir, cis.EtcdUser)
		if err != nil {
			return fmt.Errorf("looking up the user %s that etcd runs as: %w", cis.EtcdUser, err)
		}
		if !ok {
			if d.DryRun {
				return nil
			}
			return fmt.Errorf("etcd cannot run as the user %s: it does not exist yet", cis.EtcdUser)
		}
		ids = &found
		d.EtcdAccount = ids
	}
	ids.RunAs(pod, false)
	return nil
}

// chownTree gives root and everything below it to ids. Symbolic links are
// changed themselves, never followed.
func chownTree(root string, ids rootless.IDs) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(ids.UID), int(ids.GID))
	})
}

// ownFile gives path to ids with mode.
func ownFile(path string, ids rootless.IDs, mode os.FileMode) error {
	if err := os.Lchown(path, int(ids.UID), int(ids.GID)); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// restrictCertModes gives the certificate and key files of c the profile's
// mode when kept from an earlier run or provided: new ones are written with
// it already.
func restrictCertModes(d *Data, c pki.Cert) error {
	if !hardened(d) || d.DryRun {
		return nil
	}
	return pki.RestrictModes(d.CertDir, c, cis.FileMode)
}

// restrictFileModes gives each existing file of paths the profile's mode.
func restrictFileModes(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm() != cis.FileMode {
			if err := os.Chmod(p, cis.FileMode); err != nil {
				return fmt.Errorf("restricting the mode of %s: %w", p, err)
			}
		}
	}
	return nil
}

// writeAPIServerFiles writes what the hardened API server reads besides
// its certificates: the audit policy and the admission configuration, each
// only when missing (an administrator's edits are kept; the admission
// configuration not at all when the user names their own), and the audit
// log folder (mode 0700). A dry run prints them instead. Idempotent.
func writeAPIServerFiles(d *Data) error {
	files := []struct {
		path    string
		content []byte
	}{{cis.AuditPolicyFile, cis.AuditPolicy()}}
	if !userAdmissionConfig(d) {
		files = append(files, struct {
			path    string
			content []byte
		}{cis.AdmissionConfigFile, cis.AdmissionConfig()})
	}
	if d.DryRun {
		for _, f := range files {
			fmt.Fprintf(d.Out, "[dryrun] Would write file %q, unless it exists, with content:\n", f.path)
			for _, line := range bytes.Split(bytes.TrimSuffix(f.content, []byte("\n")), []byte("\n")) {
				fmt.Fprintf(d.Out, "\t%s\n", line)
			}
		}
		fmt.Fprintf(d.Out, "[dryrun] Would create the folder %q (mode 0700) for the audit log\n", cis.AuditLogDir)
		return nil
	}
	for _, f := range files {
		if err := writeIfMissing(hostPath(d, f.path), f.content); err != nil {
			return err
		}
	}
	logDir := hostPath(d, cis.AuditLogDir)
	if err := os.MkdirAll(logDir, cis.AuditLogDirMode); err != nil {
		return fmt.Errorf("creating the audit log folder: %w", err)
	}
	if err := os.Chmod(logDir, cis.AuditLogDirMode); err != nil {
		return fmt.Errorf("restricting the audit log folder: %w", err)
	}
	return nil
}

// userAdmissionConfig reports whether the API server's extra arguments
// name an admission configuration file of the user's.
func userAdmissionConfig(d *Data) bool {
	for _, a := range d.Cfg.APIServer.ExtraArgs {
		if a.Name == "admission-control-config-file" {
			return true
		}
	}
	return false
}

// writeIfMissing writes path (mode 0600) unless it exists, whose mode is
// then restricted to 0600 if need be.
func writeIfMissing(path string, content []byte) error {
	switch _, err := os.Stat(path); {
	case err == nil:
		klog.V(1).Infof("[control-plane] %s exists; kept as it is", path)
		return restrictFileModes(path)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(path, content, cis.FileMode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// EnsureKubeletServingApprover sets up, under the CISHardening profile,
// the static Pod that approves the kubelets' serving certificates on this
// control-plane node: the copy of this kubeadm program it runs (rewritten
// only when it differs), its kubeconfig file (a client certificate of its
// own, for this node's API server; kept when it trusts the cluster CA,
// renewed with renew when the manifest changes, as upgrades renew the
// other components' with their new manifests) and its manifest. Without
// the gate it does nothing. A dry run writes the kubeconfig and manifest
// into the dry-run folder and says what it would copy. Idempotent.
func EnsureKubeletServingApprover(d *Data, renew bool) error {
	if !hardened(d) {
		return nil
	}
	fmt.Fprintf(d.Out, "[control-plane] Creating static Pod manifest for %q, which approves the kubelets' serving certificates\n", staticpod.KubeletServingApprover)
	sum, err := installApproverBinary(d)
	if err != nil {
		return err
	}
	data, err := staticpod.Marshal(staticpod.KubeletServingApproverPod(&d.Cfg.ClusterConfiguration, sum))
	if err != nil {
		return err
	}
	old, _ := boundedread.ReadFile(staticpod.ManifestPath(d.ManifestDir, staticpod.KubeletServingApprover), boundedread.MaxFile)
	if err := ensureApproverKubeconfig(d, renew && !bytes.Equal(old, data)); err != nil {
		return err
	}
	return writeStaticManifest(d, staticpod.KubeletServingApprover, data)
}

// KubeletServingApproverManifest is the approver's manifest for this
// kubeadm program, as EnsureKubeletServingApprover would write it, for a
// dry run that writes nothing.
func KubeletServingApproverManifest(d *Data) ([]byte, error) {
	exe, err := executable(d)
	if err != nil {
		return nil, err
	}
	sum, err := kubeadmbinary.SHA256(exe)
	if err != nil {
		return nil, err
	}
	return staticpod.Marshal(staticpod.KubeletServingApproverPod(&d.Cfg.ClusterConfiguration, sum))
}

// RestrictCertModes gives every certificate and key of the node's
// certificate folder that exists the CISHardening profile's mode (those of
// an older run or the user's; kubeadm writes new ones with it), and etcd's
// own files back to etcd's user when it runs as one. Without the gate it
// does nothing. Idempotent.
func RestrictCertModes(d *Data) error {
	if !hardened(d) || d.DryRun {
		return nil
	}
	for _, c := range pki.CertTable() {
		if err := pki.RestrictModes(d.CertDir, c, cis.FileMode); err != nil {
			return err
		}
	}
	if err := restrictFileModes(pki.KeyPath(d.CertDir, pki.ServiceAccountKeyBase), pki.PublicKeyPath(d.CertDir, pki.ServiceAccountKeyBase)); err != nil {
		return err
	}
	if d.Cfg.Etcd.Local == nil {
		return nil
	}
	ids, ok, err := rootless.LookupAccount(d.EtcDir, cis.EtcdUser)
	if err != nil || !ok {
		return err
	}
	for _, p := range etcdTLSFiles(d.CertDir) {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := ownFile(p, ids, cis.FileMode); err != nil {
			return err
		}
	}
	return nil
}

// approverKubeconfigSpec is the approver's kubeconfig: this node's API
// server, as the controller manager's.
func approverKubeconfigSpec(d *Data) (kubeconfig.Spec, error) {
	server, err := kubeconfig.LocalAPIServerURL(d.Cfg)
	if err != nil {
		return kubeconfig.Spec{}, fmt.Errorf("%s: %w", cis.ApproverKubeconfigFile, err)
	}
	return kubeconfig.Spec{FileName: cis.ApproverKubeconfigFile, ClusterName: d.Cfg.ClusterName, Server: server, ClientName: csrapprover.User}, nil
}

func ensureApproverKubeconfig(d *Data, renew bool) error {
	spec, err := approverKubeconfigSpec(d)
	if err != nil {
		return err
	}
	path := cis.ApproverKubeconfig(d.KubeconfigDir)
	if !d.DryRun {
		if err := moveLegacyApproverKubeconfig(d.KubeconfigDir); err != nil {
			return err
		}
	}
	if renew && !d.DryRun {
		_, err := pki.RenewKubeconfigCert(&d.Cfg.ClusterConfiguration, path, d.CertDir, pki.Options{Now: d.Now})
		switch {
		case err == nil:
			fmt.Fprintf(d.Out, "[control-plane] Renewed the certificate of %s\n", spec.FileName)
			return nil
		case !errors.Is(err, pki.ErrMissing):
			return fmt.Errorf("renewing %s: %w", path, err)
		}
	}
	return ensureKubeconfigSpec(d, filepath.Dir(path), spec, nil, d.Out)
}

// moveLegacyApproverKubeconfig moves the approver's kubeconfig file of an
// older kubeadm, directly in the kubeconfig folder, into its own folder,
// unless a file is there already (then the old one is left for reset).
// The approver's new manifest mounts the folder. Idempotent.
func moveLegacyApproverKubeconfig(kubeconfigDir string) error {
	legacy, path := cis.LegacyApproverKubeconfig(kubeconfigDir), cis.ApproverKubeconfig(kubeconfigDir)
	if _, err := os.Lstat(legacy); err != nil {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), kubeconfig.DirMode); err != nil {
		return fmt.Errorf("making the folder of the approver's kubeconfig: %w", err)
	}
	if err := os.Rename(legacy, path); err != nil {
		return fmt.Errorf("moving the approver's kubeconfig into its folder: %w", err)
	}
	return atomicfile.SyncDir(kubeconfigDir)
}

// installApproverBinary copies this kubeadm program to cis.ApproverBinary
// (mode 0755), unless the copy there is the same, and returns its SHA-256.
// The program must be statically linked: the pause image it runs in has no
// C library. A dry run only says it would copy it.
func installApproverBinary(d *Data) (string, error) {
	exe, err := executable(d)
	if err != nil {
		return "", err
	}
	if err := checkStatic(exe); err != nil {
		return "", err
	}
	sum, err := kubeadmbinary.SHA256(exe)
	if err != nil {
		return "", err
	}
	if d.DryRun {
		fmt.Fprintf(d.Out, "[dryrun] Would copy %q to %q for the approver's static Pod\n", exe, cis.ApproverBinary)
		return sum, nil
	}
	if err := kubeadmbinary.Install(exe, hostPath(d, cis.ApproverBinary), sum); err != nil {
		return "", fmt.Errorf("the kubeadm program of the kubelet serving certificate approver: %w", err)
	}
	return sum, nil
}

// executable is d.Executable, else this program.
func executable(d *Data) (string, error) {
	if d.Executable != "" {
		return d.Executable, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this kubeadm program to run it as the kubelet serving certificate approver: %w", err)
	}
	return exe, nil
}

// checkStatic fails when the program at path asks for a dynamic loader.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the CISHardening profile runs it as the kubelet serving certificate approver inside the pause image, which holds no C library; use a statically linked kubeadm (built with CGO_ENABLED=0, as released)", path)
		}
	}
	return nil
}
